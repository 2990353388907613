import { constants, createCipheriv, createPublicKey, publicEncrypt, randomBytes, randomInt, type KeyObject } from 'node:crypto';
import { AppError } from '../../core/errors.js';

/**
 * Card numbers and the secrets a card carries. Pure functions: no database, no logging. The full
 * PAN, CVV and PIN leave this service only sealed for the client (clientEnvelope), and are stored
 * only sealed with the secrets key (Sealer, bound to the card id).
 */

/** The Luhn check digit that makes `digits` + digit valid. */
export function luhnCheckDigit(digits: string): number {
  let sum = 0;
  // Walking from the right of the partial number, the first digit is doubled (it sits second
  // from the right once the check digit is appended).
  for (let i = 0; i < digits.length; i++) {
    let d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 0) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return (10 - (sum % 10)) % 10;
}

export function isLuhnValid(pan: string): boolean {
  return /^\d{12,19}$/.test(pan) && luhnCheckDigit(pan.slice(0, -1)) === Number(pan.slice(-1));
}

const randomDigits = (n: number) => Array.from({ length: n }, () => String(randomInt(10))).join('');

/** A 16-digit PAN in the issuer BIN, random account digits from the CSPRNG, Luhn-valid. */
export function generatePan(bin: string): string {
  const body = bin + randomDigits(15 - bin.length);
  return body + String(luhnCheckDigit(body));
}

export const generateCvv = () => randomDigits(3);

/** A 4-digit PIN that is not trivially guessable (no repeated digit like 1111, no run like 1234). */
export function generatePin(): string {
  for (;;) {
    const pin = randomDigits(4);
    if (!isWeakPin(pin)) return pin;
  }
}

export function isWeakPin(pin: string): boolean {
  if (/^(\d)\1+$/.test(pin)) return true;
  const steps = new Set([...pin].slice(1).map((c, i) => (Number(c) - Number(pin[i]) + 10) % 10));
  return steps.size === 1 && (steps.has(1) || steps.has(9));
}

export function networkOf(bin: string): 'visa' | 'mastercard' | 'verve' {
  if (bin.startsWith('4')) return 'visa';
  if (/^(5[1-5]|2[2-7])/.test(bin)) return 'mastercard';
  return 'verve';
}

export const maskPan = (last4: string) => `************${last4}`;

/** Expiry as the reference prints it on a card object: `7/2029`. */
export const expiryLong = (month: number, year: number) => `${month}/${year}`;
/** Expiry as in the sensitive details: `07/29`. */
export const expiryShort = (month: number, year: number) => `${String(month).padStart(2, '0')}/${String(year % 100).padStart(2, '0')}`;

/** A card is usable through the last day of its expiry month (UTC). */
export function isExpired(month: number, year: number, now = new Date()): boolean {
  return now.getTime() >= Date.UTC(year, month, 1);
}

const MAX_HEADER_CHARS = 16_384;
const MIN_RSA_BITS = 2048;
// A bound on the RSA work a client can make us do per request.
const MAX_RSA_BITS = 8192;

/**
 * `X-Client-Public-Key`: base64 of a PEM RSA public key of at least 2048 bits. Missing or unusable
 * is 400 and nothing is read from the card.
 */
export function parseClientPublicKey(header: string | string[] | undefined): KeyObject {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || value.trim() === '') {
    throw new AppError('missing_client_public_key', 'Send your RSA public key (base64 of the PEM) in X-Client-Public-Key');
  }
  const invalid = (why: string) =>
    new AppError('invalid_client_public_key', `X-Client-Public-Key: ${why}`, [
      { field: 'X-Client-Public-Key', code: 'invalid', message: why },
    ]);
  if (value.length > MAX_HEADER_CHARS || !/^[A-Za-z0-9+/=\s]+$/.test(value)) throw invalid('must be base64 of a PEM public key');
  const pem = Buffer.from(value, 'base64').toString('utf8');
  if (!pem.includes('-----BEGIN')) throw invalid('must be base64 of a PEM public key');
  let key: KeyObject;
  try {
    key = createPublicKey({ key: pem, format: 'pem' });
  } catch {
    throw invalid('is not a readable PEM public key');
  }
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
  if (key.asymmetricKeyType !== 'rsa') throw invalid('must be an RSA key');
  if (bits < MIN_RSA_BITS || bits > MAX_RSA_BITS) throw invalid(`must be an RSA key of ${MIN_RSA_BITS}-${MAX_RSA_BITS} bits`);
  return key;
}

export interface ClientEnvelope {
  ciphertext: string;
  encrypted_key: string;
  nonce: string;
}

/**
 * Contract section 13: a fresh AES-256 key wrapped with RSA-OAEP (SHA-256) under the client's key;
 * the JSON secret sealed with AES-256-GCM, 12-byte nonce, the 16-byte tag appended to the
 * ciphertext. All base64. Only the holder of the private key can read it.
 */
export function clientEnvelope(publicKey: KeyObject, secret: object): ClientEnvelope {
  const aesKey = randomBytes(32);
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', aesKey, nonce);
  const body = Buffer.concat([cipher.update(JSON.stringify(secret), 'utf8'), cipher.final(), cipher.getAuthTag()]);
  const wrapped = publicEncrypt({ key: publicKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' }, aesKey);
  aesKey.fill(0);
  return { ciphertext: body.toString('base64'), encrypted_key: wrapped.toString('base64'), nonce: nonce.toString('base64') };
}
