/** PostgreSQL error classification, the same on pg and PGlite (both carry the SQLSTATE `code`). */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: string; constraint?: string } | null;
  return e?.code === '23505' && (constraint === undefined || e.constraint === constraint);
}

/** errno codes of a socket to the database that failed, or never connected. */
const SOCKET_GONE = new Set([
  'EPIPE',
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * The database is not there for this request, through no fault of the request: the connection
 * is gone or never came (class 08, errno codes), the server is shutting down, crashed or not yet
 * accepting (57P01-57P05), or the server is not the primary (25006: a write in a read-only
 * transaction means this host became a standby, so a failover happened). The client retries;
 * with the same Idempotency-Key it gets the one answer.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return false;
  return SOCKET_GONE.has(code) || code.startsWith('08') || /^57P0[1-5]$/.test(code) || code === '25006';
}

/** A write refused because the server is in recovery or read-only: the host in use stopped being the primary. */
export function isNotPrimary(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === '25006';
}
