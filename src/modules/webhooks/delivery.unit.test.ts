import { describe, expect, it } from 'vitest';
import { decide, DEFAULT_DELIVERY_OPTIONS, DEFAULT_RETRY_DELAYS_MS } from './delivery.js';
import { parseRetryAfter, type SendResult } from './sender.js';
import { signatureHeader } from './signing.js';
import { isBlockedAddress, isLinkLocal } from './url-safety.js';

const result = (statusCode: number | null, retryAfterMs: number | null = null): SendResult => ({
  statusCode,
  headers: null,
  excerpt: null,
  error: statusCode === null ? 'ECONNREFUSED' : null,
  durationMs: 1,
  retryAfterMs,
});
const noJitter = { ...DEFAULT_DELIVERY_OPTIONS, jitter: 0 };

describe('decide', () => {
  it('follows the documented schedule, then fails and disables', () => {
    const now = 1_000_000;
    DEFAULT_RETRY_DELAYS_MS.forEach((delay, i) => {
      expect(decide(i + 1, false, result(500), noJitter, now)).toMatchObject({
        status: 'retrying',
        nextAttemptAt: new Date(now + delay),
        disable: null,
      });
    });
    expect(decide(10, false, result(null), noJitter, now)).toMatchObject({ status: 'failed', disable: 'retries_exhausted' });
    expect(DEFAULT_RETRY_DELAYS_MS.map((ms) => ms / 1000)).toEqual([5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400]);
  });

  it('treats only 2xx as delivered, 410 as gone, and a manual failure as final without disabling', () => {
    expect(decide(1, false, result(204), noJitter).status).toBe('sent');
    expect(decide(1, false, result(301), noJitter).status).toBe('retrying');
    expect(decide(1, false, result(410), noJitter)).toMatchObject({ status: 'failed', disable: 'endpoint_gone' });
    expect(decide(1, true, result(500), noJitter)).toMatchObject({ status: 'failed', disable: null });
  });

  it('jitters within the bound and honours a longer Retry-After', () => {
    for (let i = 0; i < 100; i++) {
      const at = decide(1, false, result(500), DEFAULT_DELIVERY_OPTIONS, 0).nextAttemptAt!.getTime();
      expect(at).toBeGreaterThanOrEqual(4500);
      expect(at).toBeLessThanOrEqual(5500);
    }
    expect(decide(1, false, result(503, 60_000), noJitter, 0).nextAttemptAt!.getTime()).toBe(60_000);
    expect(decide(1, false, result(503, 10 * 86_400_000), noJitter, 0).nextAttemptAt!.getTime()).toBe(86_400_000);
  });
});

describe('parseRetryAfter', () => {
  it('reads seconds and HTTP dates', () => {
    expect(parseRetryAfter('120')).toBe(120_000);
    expect(parseRetryAfter(new Date(61_000).toUTCString(), 1_000)).toBe(60_000);
    expect(parseRetryAfter('soon')).toBeNull();
    expect(parseRetryAfter(undefined)).toBeNull();
  });
});

describe('isBlockedAddress', () => {
  it('blocks private, loopback, link-local and mapped addresses, allows public ones', () => {
    for (const a of [
      '127.0.0.1',
      '10.0.0.1',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      '::',
      'fe80::1',
      'fd00::1',
      '::ffff:10.0.0.1',
      'not-an-ip',
    ]) {
      expect(isBlockedAddress(a), a).toBe(true);
    }
    for (const a of ['8.8.8.8', '93.184.216.34', '172.32.0.1', '2606:4700::1111']) expect(isBlockedAddress(a), a).toBe(false);
    expect(isBlockedAddress('::ffff:7f00:1')).toBe(true);
  });

  it('marks only link-local as refused in sandbox', () => {
    for (const a of ['169.254.169.254', 'fe80::1', '::ffff:169.254.169.254']) expect(isLinkLocal(a), a).toBe(true);
    for (const a of ['127.0.0.1', '10.0.0.1', '::1', '8.8.8.8']) expect(isLinkLocal(a), a).toBe(false);
  });
});

describe('signatureHeader', () => {
  it('matches the Standard Webhooks test vector', () => {
    // From the Standard Webhooks specification's reference implementations.
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const sig = signatureHeader([secret], 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}');
    expect(sig).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });
});
