import { generateKeyPairSync } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decryptEnvelope, rsaKeyPair } from '../../../test/card-crypto.js';
import {
  clientEnvelope,
  expiryShort,
  generatePan,
  generatePin,
  isExpired,
  isLuhnValid,
  isWeakPin,
  luhnCheckDigit,
  networkOf,
  parseClientPublicKey,
} from './secrets.js';

describe('Luhn and card numbers', () => {
  it('knows well-known valid and invalid numbers', () => {
    expect(isLuhnValid('4242424242424242')).toBe(true);
    expect(isLuhnValid('4000000000000002')).toBe(true);
    expect(isLuhnValid('4242424242424241')).toBe(false);
    expect(isLuhnValid('79927398713')).toBe(false); // too short for a card
    expect(luhnCheckDigit('7992739871')).toBe(3);
  });

  it('generates 16-digit Luhn-valid PANs in the configured BIN (property)', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[2-6]\d{5,7}$/), (bin) => {
        const pan = generatePan(bin);
        return pan.length === 16 && pan.startsWith(bin) && isLuhnValid(pan);
      }),
      { numRuns: 300 },
    );
  });

  it('detects every single-digit error (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 15 }), fc.integer({ min: 1, max: 9 }), (pos, delta) => {
        const pan = generatePan('49000088');
        const wrong = pan.slice(0, pos) + String((Number(pan[pos]) + delta) % 10) + pan.slice(pos + 1);
        return !isLuhnValid(wrong);
      }),
    );
  });

  it('names the network from the BIN', () => {
    expect(networkOf('49000088')).toBe('visa');
    expect(networkOf('510000')).toBe('mastercard');
    expect(networkOf('222100')).toBe('mastercard');
    expect(networkOf('506099')).toBe('verve');
  });

  it('makes PINs that are not trivial', () => {
    for (let i = 0; i < 200; i++) {
      const pin = generatePin();
      expect(pin).toMatch(/^\d{4}$/);
      expect(isWeakPin(pin)).toBe(false);
    }
    for (const weak of ['0000', '1111', '1234', '4321', '8901', '123456']) expect(isWeakPin(weak), weak).toBe(true);
    expect(isWeakPin('1357')).toBe(false);
  });

  it('expires after the last day of the expiry month', () => {
    expect(isExpired(7, 2029, new Date('2029-07-31T23:59:59Z'))).toBe(false);
    expect(isExpired(7, 2029, new Date('2029-08-01T00:00:00Z'))).toBe(true);
    expect(isExpired(12, 2029, new Date('2029-12-31T12:00:00Z'))).toBe(false);
    expect(isExpired(12, 2029, new Date('2030-01-01T00:00:00Z'))).toBe(true);
    expect(expiryShort(7, 2029)).toBe('07/29');
  });
});

describe('client envelope (docs/api-rules.md#card-secrets)', () => {
  const keys = rsaKeyPair();

  it('round-trips through RSA-OAEP-SHA256 + AES-256-GCM with node:crypto', () => {
    const env = clientEnvelope(parseClientPublicKey(keys.header), { pin: '2580' });
    expect(Buffer.from(env.nonce, 'base64')).toHaveLength(12);
    expect(Buffer.from(env.encrypted_key, 'base64')).toHaveLength(256);
    expect(decryptEnvelope(keys.privateKey, env)).toEqual({ pin: '2580' });
  });

  it('uses a fresh key and nonce every time', () => {
    const key = parseClientPublicKey(keys.header);
    const a = clientEnvelope(key, { pin: '2580' });
    const b = clientEnvelope(key, { pin: '2580' });
    expect(a.nonce).not.toBe(b.nonce);
    expect(a.ciphertext).not.toBe(b.ciphertext);
  });

  it('rejects a tampered ciphertext (GCM tag)', () => {
    const env = clientEnvelope(parseClientPublicKey(keys.header), { pin: '2580' });
    const raw = Buffer.from(env.ciphertext, 'base64');
    raw[0] = raw[0]! ^ 1;
    expect(() => decryptEnvelope(keys.privateKey, { ...env, ciphertext: raw.toString('base64') })).toThrow();
  });

  it('refuses missing, garbled, small and non-RSA keys with 400 codes', () => {
    const code = (h: string | undefined) => {
      try {
        parseClientPublicKey(h);
        return 'ok';
      } catch (err) {
        return (err as { code: string }).code;
      }
    };
    expect(code(undefined)).toBe('missing_client_public_key');
    expect(code('')).toBe('missing_client_public_key');
    expect(code('not base64 !!!')).toBe('invalid_client_public_key');
    expect(code(Buffer.from('hello').toString('base64'))).toBe('invalid_client_public_key');
    expect(code(Buffer.from('-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n').toString('base64'))).toBe(
      'invalid_client_public_key',
    );
    expect(code(rsaKeyPair(1024).header)).toBe('invalid_client_public_key');
    const ec = generateKeyPairSync('ec', {
      namedCurve: 'P-256',
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    expect(code(Buffer.from(ec.publicKey).toString('base64'))).toBe('invalid_client_public_key');
    expect(code(keys.header)).toBe('ok');
  });
});
