/** Resolves true as soon as `done()` holds, false once `timeoutMs` passed or `gaveUp()` holds. */
export async function pollUntil(
  done: () => boolean,
  timeoutMs: number,
  gaveUp: () => boolean = () => false,
  stepMs = 10,
): Promise<boolean> {
  const started = Date.now();
  while (!done()) {
    if (gaveUp() || Date.now() - started > timeoutMs) return false;
    await new Promise((r) => setTimeout(r, stepMs));
  }
  return true;
}
