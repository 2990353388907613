import { describe, expect, it } from 'vitest';
import { omitNulls } from './absent.js';

describe('omitNulls', () => {
  it('drops the named fields that have no value and keeps every other field as it is', () => {
    const row = { a: null as string | null, b: 'x' as string | null, c: null as string | null, d: 0 as number | null };
    const out = omitNulls(row, ['a', 'b', 'd']);
    expect(out).toEqual({ b: 'x', c: null, d: 0 });
    expect('a' in out).toBe(false);
    expect(JSON.stringify(out)).toBe('{"b":"x","c":null,"d":0}');
  });
});
