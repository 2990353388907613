/**
 * The null policy (docs/api-rules.md#absent-values): a field the reference types as a non-null string, number or
 * enum is omitted when it has no value, never sent as `null`, so strictly typed clients (Rust,
 * Swift, Kotlin) decode every answer. Response schemas declare such fields `.optional()`; the
 * format function passes its row through `omitNulls` naming them. Fields the reference itself
 * types as nullable (and our own additions documented as nullable) keep `null`.
 */
export type WithoutNulls<T, K extends keyof T> = Omit<T, K> & { [P in K]?: Exclude<T[P], null> };

export function omitNulls<T extends object, K extends keyof T>(value: T, keys: readonly K[]): WithoutNulls<T, K> {
  const out = { ...value } as Record<PropertyKey, unknown>;
  for (const k of keys) if (out[k as PropertyKey] === null || out[k as PropertyKey] === undefined) delete out[k as PropertyKey];
  return out as WithoutNulls<T, K>;
}
