import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';

/** A development server keeps its start banner on screen: no access line per request unless asked. */
describe('development log level', () => {
  it('is warn by default in development, and LOG_LEVEL still decides when set', () => {
    expect(loadConfig({}).LOG_LEVEL).toBe('warn');
    expect(loadConfig({ LOG_LEVEL: 'info' }).LOG_LEVEL).toBe('info');
    expect(loadConfig({ LOG_LEVEL: 'debug' }).LOG_LEVEL).toBe('debug');
    expect(loadConfig({}, { LOG_LEVEL: 'silent' }).LOG_LEVEL).toBe('silent');
  });
});
