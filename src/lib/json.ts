import { parse } from 'lossless-json';

/**
 * JSON.parse, except that a number whose text does not survive a round trip through a double
 * (`100.50`, `100.129999999999999999`, `1e2`, 20-digit integers) is kept as its exact text. Money
 * rules judge the amount as sent, never a float that JSON.parse rounded.
 */
export function parseJsonPreservingNumbers(text: string): unknown {
  return parse(text, null, (numberText: string) => {
    const n = Number(numberText);
    return String(n) === numberText ? n : numberText;
  });
}

/**
 * Stable JSON (sorted keys, undefined members left out) for fingerprints. Every Idempotency-Key
 * record holds a hash of it, so its text must never change (test/lib/canonical-json.test.ts);
 * built by concatenation, without the arrays of entries a map and join would allocate per request.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) {
    let text = '[';
    for (let i = 0; i < value.length; i++) text += (i === 0 ? '' : ',') + canonicalJson(value[i]);
    return `${text}]`;
  }
  const object = value as Record<string, unknown>;
  let text = '{';
  for (const key of Object.keys(object).sort()) {
    const member = object[key];
    if (member === undefined) continue;
    text += `${text.length === 1 ? '' : ','}${JSON.stringify(key)}:${canonicalJson(member)}`;
  }
  return `${text}}`;
}
