/**
 * PostgreSQL aborts one of two transactions that wait on each other (deadlock, 40P01) or that
 * cannot be serialized (40001). The aborted transaction has changed nothing, so running it again
 * from the start is safe and is what the database asks for. Entry points that own a transaction
 * wrap it in this so a conflict between processes costs a short wait, never a 500.
 */
export const RETRYABLE_SQLSTATES = new Set(['40P01', '40001']);

/**
 * A prepared statement whose table changed shape since it was planned (a newer process migrated
 * while this one runs): PostgreSQL refuses it once; the connection prepares anew (db/client.ts)
 * and the rolled-back unit can run again.
 */
export function isStalePlan(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  return e?.code === '0A000' && typeof e.message === 'string' && e.message.startsWith('cached plan must not change result type');
}

export function isRetryableConflict(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return (typeof code === 'string' && RETRYABLE_SQLSTATES.has(code)) || isStalePlan(err);
}

export async function retryOnConflict<T>(run: () => Promise<T>, attempts = 5): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (err) {
      if (attempt >= attempts || !isRetryableConflict(err)) throw err;
      // Jittered backoff so the two sides do not collide again in step.
      await new Promise((r) => setTimeout(r, Math.random() * 10 * 2 ** attempt));
    }
  }
}
