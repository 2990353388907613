import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { createRequire } from 'node:module';

/**
 * scrypt with N=2^15, r=8, p=1, which needs 128·N·r bytes of memory per hash. OWASP's minimum is
 * N=2^17 at p=1 or N=2^15 with a higher p; we take N=2^15, p=1 and rely on the login rate limit as
 * well, so that hashing does not starve the API's requests of CPU. Parameters are stored with each
 * hash, so raising them later only needs a re-hash at the next login.
 */
const PARAMS = { N: 2 ** 15, r: 8, p: 1 } as const;
const KEY_LENGTH = 32;
const SALT_BYTES = 16;

function derive(password: string, salt: Buffer, params: { N: number; r: number; p: number }): Promise<Buffer> {
  const options: ScryptOptions = { ...params, maxmem: 256 * params.N * params.r + 1024 * 1024 };
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, options, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, PARAMS);
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64'), key.toString('base64')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [alg, n, r, p, saltB64, keyB64] = stored.split('$');
  if (alg !== 'scrypt' || !saltB64 || !keyB64) return false;
  const expected = Buffer.from(keyB64, 'base64');
  const actual = await derive(password, Buffer.from(saltB64, 'base64'), { N: Number(n), r: Number(r), p: Number(p) });
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** A hash of nothing, verified when the email is unknown so both answers take the same time. */
let dummyHash: Promise<string> | undefined;
export async function verifyAgainstDummy(password: string): Promise<false> {
  dummyHash ??= hashPassword(randomBytes(16).toString('hex'));
  await verifyPassword(password, await dummyHash);
  return false;
}

let common: Set<string> | undefined;

/** zxcvbn's word lists, read at the first check: megabytes that only password changes need. */
function commonPasswords(): Set<string> {
  const { dictionary } = createRequire(import.meta.url)('@zxcvbn-ts/language-common') as typeof import('@zxcvbn-ts/language-common');
  return new Set(dictionary['passwords-common']);
}

/**
 * Whether a password is one attackers try first: on zxcvbn's list of common passwords (tens of
 * thousands, from real breaches), as typed or with digits and symbols around a listed word
 * (`Password2024!`), or one character repeated. Length alone lets `123456789012` through.
 */
export function isCommonPassword(password: string): boolean {
  common ??= commonPasswords();
  const lower = password.normalize('NFKC').toLowerCase();
  if (common.has(lower) || new Set(lower).size <= 2) return true;
  const core = lower.replace(/^[^a-z]+|[^a-z]+$/g, '');
  return core.length >= 4 && core !== lower && common.has(core);
}
