import pino from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { lazyChildLogger } from '../../src/http/lazy-logger.js';
import { pinoRedactPaths } from '../../src/lib/redact.js';

/** A request's logger (Fastify's childLoggerFactory in app.ts): pino's child, made on first use. */
function production() {
  const lines: Record<string, unknown>[] = [];
  const root = pino({ level: 'info', redact: pinoRedactPaths() }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { root, lines };
}

describe('a request logger made when first written to', () => {
  it('makes no pino child for a request that writes nothing', () => {
    const { root } = production();
    const child = vi.spyOn(root, 'child');
    const logger = lazyChildLogger(root, { reqId: 'req-1' }, {});
    expect(logger.level).toBe('info');
    expect(child).not.toHaveBeenCalled();
  });

  it('writes with the request id bound and the same redaction, making the child once', () => {
    const { root, lines } = production();
    const child = vi.spyOn(root, 'child');
    const logger = lazyChildLogger(root, { reqId: 'req-2' }, {});
    logger.warn({ body: { password: 'hunter2', amount: '1.00' } }, 'first');
    logger.error({ err: new Error('boom'), detail: { card_number: '4242424242424242' } }, 'second');
    logger.info('third %s', 'interpolated');
    logger.debug('below the level: not written');
    expect(child).toHaveBeenCalledTimes(1);
    expect(lines).toHaveLength(3);
    expect(lines[2]).toEqual(expect.objectContaining({ reqId: 'req-2', msg: 'third interpolated' }));
    expect(lines[0]).toMatchObject({ reqId: 'req-2', level: 40, msg: 'first', body: { password: '[Redacted]', amount: '1.00' } });
    expect(lines[1]).toMatchObject({ reqId: 'req-2', level: 50, msg: 'second', detail: { card_number: '[Redacted]' } });
    expect(JSON.stringify(lines)).not.toContain('hunter2');
    expect(JSON.stringify(lines)).not.toContain('4242424242424242');
  });

  it("keeps a route's own level and the child's own bindings", () => {
    const { root, lines } = production();
    const quiet = lazyChildLogger(root, { reqId: 'req-3' }, { level: 'error' });
    expect(quiet.level).toBe('error');
    quiet.warn('below the route level');
    quiet.child({ step: 'mail' }).error('sent?');
    expect(lines).toEqual([expect.objectContaining({ reqId: 'req-3', step: 'mail', msg: 'sent?' })]);
    quiet.level = 'warn';
    quiet.warn('now written');
    expect(lines.at(-1)).toMatchObject({ reqId: 'req-3', msg: 'now written' });
  });
});
