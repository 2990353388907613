/** PostgreSQL error classification, the same on pg and PGlite (both carry the SQLSTATE `code`). */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: string; constraint?: string } | null;
  return e?.code === '23505' && (constraint === undefined || e.constraint === constraint);
}
