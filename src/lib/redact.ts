/**
 * The one set of redaction rules for everything that leaves the request path for storage or
 * display: the process log (pino `redact` paths built from the same lists, see app.ts) and the
 * API request log (bodies go through `redactValue` before they are stored). Secrets and card data
 * never reach either: API keys, webhook secrets, passwords, card numbers, CVVs, PINs, expiries.
 */

/** Request and response headers that are never kept. */
export const SENSITIVE_HEADERS = ['api-key', 'authorization', 'cookie', 'set-cookie', 'x-client-public-key'] as const;

/** Body fields (at any depth, case-insensitive) whose value is never kept. */
export const SENSITIVE_FIELDS = [
  'secret',
  'secret_key',
  'public_key',
  'api_key',
  'password',
  'card_number',
  'number',
  'pan',
  'cvv',
  'cvc',
  'pin',
  'expiry',
  'expiry_month',
  'expiry_year',
  'card_token',
  'ciphertext',
  'encrypted_key',
  'nonce',
  'file',
  'document',
  'content',
  'card_pin',
  'new_pin',
  'token',
  'client_secret',
  'webhook_secret',
  'current_password',
  'new_password',
] as const;

/**
 * Words that make any key holding them sensitive, as a segment of the key: `card_pin`, `cardPin`,
 * `new-PIN`, `pin.code`, `signingSecret`, `access_token` all carry one. Matching whole segments,
 * not substrings, keeps harmless keys such as `spin`, `panel`, `company` or `shipping` readable.
 */
const SENSITIVE_SEGMENTS = new Set([
  'pin',
  'pins',
  'cvv',
  'cvv2',
  'cvc',
  'cvc2',
  'pan',
  'secret',
  'secrets',
  'password',
  'passwords',
  'passwd',
  'passphrase',
  'token',
  'tokens',
]);
/** Runs of segments that are sensitive together (`card_number`, `CardNumber`, `card_exp_month`). */
const SENSITIVE_PAIRS = [
  ['card', 'number'],
  ['exp', 'month'],
  ['exp', 'year'],
  ['expiry', 'month'],
  ['expiry', 'year'],
] as const;

export const REDACTED = '[redacted]';

const FIELD_SET = new Set<string>(SENSITIVE_FIELDS);
/** Key-shaped strings anywhere: our API keys and webhook secrets. */
const SECRET_STRING = /\b(?:sk|pk)_(?:sandbox|live)_[A-Za-z0-9]{8,}|whsec_[A-Za-z0-9+/=]{8,}/g;
/** 13-19 digits, optionally grouped by spaces or dashes: checked with Luhn before redacting. */
const DIGIT_RUN = /\b\d(?:[ -]?\d){12,18}\b/g;

function luhnValid(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

const SECRET_HINT = /(?:sk|pk)_(?:sandbox|live)_|whsec_/;

/**
 * 13 digits in a row, single spaces or dashes allowed between them, written out digit by digit:
 * irregexp runs this several times faster than `\d(?:[ -]?\d){12}` or a loop over the characters
 * in JavaScript, over a body with no such run (most of them).
 */
const LONG_DIGIT_RUN = new RegExp(`\\d${'[ -]?\\d'.repeat(12)}`);

/** Whether 13+ digits follow each other (single spaces or dashes allowed): a cheap pre-check. */
export function hasLongDigitRun(value: string): boolean {
  return LONG_DIGIT_RUN.test(value);
}

/** A string with key-shaped secrets and Luhn-valid card numbers replaced. */
export function redactString(value: string): string {
  let out = SECRET_HINT.test(value) ? value.replace(SECRET_STRING, REDACTED) : value;
  if (!hasLongDigitRun(out)) return out;
  out = out.replace(DIGIT_RUN, (run) => {
    const digits = run.replace(/[ -]/g, '');
    return luhnValid(digits) ? REDACTED : run;
  });
  return out;
}

/** A key's words: split on `_`, `-`, `.`, spaces and camelCase boundaries (`cardPIN2` → card, pin2). */
export function keySegments(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .toLowerCase()
    .split(/[\s_.-]+/)
    .filter((w) => w !== '');
}

const verdicts = new Map<string, boolean>();

function judge(name: string): boolean {
  if (FIELD_SET.has(name.toLowerCase())) return true;
  const words = keySegments(name);
  if (words.some((w) => SENSITIVE_SEGMENTS.has(w))) return true;
  return SENSITIVE_PAIRS.some(([a, b]) => words.some((w, i) => w === a && words[i + 1] === b));
}

export function isSensitiveField(name: string): boolean {
  let verdict = verdicts.get(name);
  if (verdict === undefined) {
    verdict = judge(name);
    // Keys come from clients too: the memo stays bounded.
    if (verdicts.size >= 10_000) verdicts.clear();
    verdicts.set(name, verdict);
  }
  return verdict;
}

/**
 * A deep copy of a JSON value with sensitive fields replaced and secret-looking strings masked.
 * Depth is bounded so a hostile body cannot make it recurse without end.
 */
export function redactValue(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return redactString(value);
  if (value === null || typeof value !== 'object') return value;
  if (depth > 32) return REDACTED;
  if (Array.isArray(value)) return value.map((v) => redactValue(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    // A flag (`pin_set: true`) tells nothing secret; any other value of a sensitive key goes.
    out[k] = isSensitiveField(k) && v !== null && v !== undefined && typeof v !== 'boolean' ? REDACTED : redactValue(v, depth + 1);
  }
  return out;
}

/** Every key of a JSON text (as JSON.stringify writes them). */
const JSON_KEY = /"((?:[^"\\]|\\.)*)"\s*:/g;

/**
 * A word's letters in either case, as `isSensitiveField` lowercases them: the Kelvin sign (U+212A)
 * is the one character outside ASCII that lowercases to an ASCII letter (k), so it counts as k.
 */
function eitherCase(word: string): string {
  return [...word].map((c) => (/[a-z]/.test(c) ? `[${c}${c.toUpperCase()}${c === 'k' ? '\u212A' : ''}]` : c)).join('');
}

/**
 * Matches wherever a sensitive key could be, and (almost) nowhere else: a field name as a whole
 * key, a sensitive word that ends a segment (what follows it is not a lowercase letter: the end
 * of the key, a separator or an uppercase letter starting the next camelCase word), and the
 * sensitive pairs with separators or nothing between them. Every key `isSensitiveField` accepts
 * has one of these in its text, so text without a match has no sensitive key and is not scanned
 * key by key (test/lib/sensitive-key-hint.test.ts checks this against the scan). Values can match
 * too (a label "Card PIN"): then the scan decides, as before.
 */
const SENSITIVE_KEY_HINT = new RegExp(
  [
    `"(?:${SENSITIVE_FIELDS.map(eitherCase).join('|')})"`,
    `(?:${[...SENSITIVE_SEGMENTS].map(eitherCase).join('|')})(?![a-z])`,
    ...SENSITIVE_PAIRS.map(([a, b]) => `${eitherCase(a)}[\\s_.-]*${eitherCase(b)}`),
  ].join('|'),
);

/** Whether a JSON text may hold a key that `isSensitiveField` accepts (false: it certainly does not). */
export function mayHoldSensitiveKey(text: string): boolean {
  return SENSITIVE_KEY_HINT.test(text);
}

/** The same matches as `text.matchAll(JSON_KEY)`, without the iterator and the copy of the expression it makes per call. */
function hasSensitiveKey(text: string): boolean {
  if (!mayHoldSensitiveKey(text)) return false;
  JSON_KEY.lastIndex = 0;
  for (let m = JSON_KEY.exec(text); m !== null; m = JSON_KEY.exec(text)) if (isSensitiveField(m[1]!)) return true;
  return false;
}

/**
 * JSON text → redacted JSON text; text that is not JSON is redacted as a string.
 *
 * Text with no sensitive key, no key-shaped string and no 13-digit run is returned as it is,
 * without parsing and copying it: that is most responses, and the full pass cost as much as the
 * rest of recording a request. The check is on the text as JSON.stringify writes it (our own
 * responses): it writes a key's letters as they are, never as \u escapes. `keysClean`: the
 * text's writer saw every key it wrote and none was sensitive (http/serializer.ts), so only its
 * values are checked; the key scan was most of the check's cost on an account's answer.
 */
export function redactJsonText(text: string, keysClean = false): string {
  if (!SECRET_HINT.test(text) && !hasLongDigitRun(text) && (keysClean || !hasSensitiveKey(text))) return text;
  try {
    return JSON.stringify(redactValue(JSON.parse(text)));
  } catch {
    return redactString(text);
  }
}

/** pino `redact` paths from the same lists, so the process log hides what the request log hides. */
export function pinoRedactPaths(): string[] {
  return [
    ...SENSITIVE_HEADERS.map((h) => `req.headers["${h}"]`),
    ...SENSITIVE_HEADERS.map((h) => `res.headers["${h}"]`),
    ...SENSITIVE_FIELDS.flatMap((f) => [`body.${f}`, `*.${f}`]),
  ];
}
