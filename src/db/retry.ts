/**
 * PostgreSQL aborts one of two transactions that wait on each other (deadlock, 40P01) or that
 * cannot be serialized (40001). The aborted transaction has changed nothing, so running it again
 * from the start is safe and is what the database asks for. Entry points that own a transaction
 * wrap it in this so a conflict between processes costs a short wait, never a 500.
 */
export const RETRYABLE_SQLSTATES = new Set(['40P01', '40001']);

export function isRetryableConflict(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && RETRYABLE_SQLSTATES.has(code);
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
