import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isSensitiveField, mayHoldSensitiveKey, redactJsonText, redactValue, SENSITIVE_FIELDS } from '../../src/lib/redact.js';

/**
 * redactJsonText skips its key-by-key scan when the text has no match for mayHoldSensitiveKey.
 * That is only safe if every key the scan would judge sensitive matches: keys are built here from
 * the sensitive words, words that merely contain them, separators, camelCase and any case.
 */
const WORDS = [
  ...SENSITIVE_FIELDS,
  'pin',
  'pins',
  'cvv2',
  'cvc2',
  'pan',
  'secrets',
  'passwords',
  'passwd',
  'passphrase',
  'tokens',
  'card',
  'exp',
  'month',
  'year',
  'number',
  // Near misses: they hold a sensitive word without being one.
  'spin',
  'pinned',
  'panel',
  'company',
  'tokenized',
  'account',
  'numbers',
  'expired',
  'cards',
  'amount',
  'id',
];
const SEPARATORS = ['_', '-', '.', ' ', '__', '\u00a0', ''];

const anyCase = (word: string) =>
  fc
    .array(fc.constantFrom('lower', 'upper', 'kelvin'), { minLength: word.length, maxLength: word.length })
    .map((cases) =>
      [...word].map((c, i) => (cases[i] === 'upper' ? c.toUpperCase() : cases[i] === 'kelvin' && c === 'k' ? '\u212A' : c)).join(''),
    );

const key = fc
  .array(fc.tuple(fc.constantFrom(...WORDS).chain(anyCase), fc.constantFrom(...SEPARATORS)), { minLength: 1, maxLength: 4 })
  .map((parts) => parts.map(([w, s], i) => (i === parts.length - 1 ? w : w + s)).join(''));

describe('the sensitive-key hint', () => {
  it('matches every key the key-by-key scan judges sensitive', () => {
    fc.assert(
      fc.property(key, (k) => {
        if (isSensitiveField(k)) expect(mayHoldSensitiveKey(JSON.stringify({ id: 'x', [k]: 'v' }))).toBe(true);
      }),
      { numRuns: 5000 },
    );
  });

  it('leaves redactJsonText answering as a full redaction of the parsed text', () => {
    const value = fc.dictionary(key, fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.dictionary(key, fc.string(), { maxKeys: 3 })), {
      maxKeys: 5,
    });
    fc.assert(
      fc.property(value, (v) => {
        expect(JSON.parse(redactJsonText(JSON.stringify(v)))).toEqual(redactValue(v));
      }),
      { numRuns: 2000 },
    );
  });

  it('does not match the keys of an account or a transfer', () => {
    const keys = [
      'id',
      'label',
      'is_tokenized',
      'account_number',
      'virtual_account_bank_account_number',
      'routing_number',
      'capabilities',
      'available_balance',
      'client_reference',
      'destination_account_id',
    ];
    expect(mayHoldSensitiveKey(JSON.stringify(Object.fromEntries(keys.map((k) => [k, 'a']))))).toBe(false);
    expect(mayHoldSensitiveKey('{"data":{"cardNumber":"x"}}')).toBe(true);
    expect(mayHoldSensitiveKey('{"new-PIN":"x"}')).toBe(true);
    expect(mayHoldSensitiveKey('{"access_to\u212Aen":"x"}')).toBe(true);
  });
});
