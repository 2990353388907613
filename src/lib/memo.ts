/**
 * A value per key, made once: a batch looks up what many of its items share (a rate book, a
 * fee account, a system account per business and currency) once, however many items need it.
 */
export function keyedOnce<T>(): (key: string, make: () => Promise<T>) => Promise<T> {
  const seen = new Map<string, Promise<T>>();
  return (key, make) => {
    if (!seen.has(key)) seen.set(key, make());
    return seen.get(key)!;
  };
}
