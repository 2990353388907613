import { uuidv7 } from 'uuidv7';

/** Every resource id: UUIDv7, time-ordered, so newest-first is id-descending. */
export function newId(): string {
  return uuidv7();
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export function isUuid(value: string): boolean {
  return UUID_RE.test(value);
}

/**
 * The smallest UUIDv7 of a millisecond: ids made at or after `date` compare >= this. Lets date
 * filters use the primary-key order instead of a second index on created_at.
 */
export function uuidv7LowerBound(date: Date): string {
  const hex = Math.max(0, date.getTime()).toString(16).padStart(12, '0').slice(-12);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-0000-0000-000000000000`;
}
