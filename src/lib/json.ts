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

/** Stable JSON (sorted keys) for fingerprints. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}
