import { randomFillSync } from 'node:crypto';
import { V7Generator } from 'uuidv7';

/**
 * The CSPRNG's output drawn 8 KiB at a time. The library's default draws 32 bytes at a time, and
 * each draw is a call into OpenSSL that checks the process id with a system call: a transfer
 * makes about ten ids, so that was one system call a transfer for 4 bytes each.
 */
class BufferedRandom {
  private readonly words = new Uint32Array(2048);
  private next = this.words.length;

  nextUint32(): number {
    if (this.next === this.words.length) {
      randomFillSync(this.words);
      this.next = 0;
    }
    return this.words[this.next++]!;
  }
}

const generator = new V7Generator(new BufferedRandom());

const HEX_DIGITS = Buffer.from('0123456789abcdef', 'latin1');
const idText = Buffer.alloc(36);

/**
 * A UUID's canonical text (8-4-4-4-12 lowercase hex), as the library's toString writes it, written
 * into one reused buffer and read out as one string: toString adds a character at a time, 36
 * string pieces for every id, and a transfer makes about ten ids.
 */
export function uuidText(bytes: Uint8Array): string {
  let at = 0;
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) idText[at++] = 0x2d; // '-'
    idText[at++] = HEX_DIGITS[bytes[i]! >>> 4]!;
    idText[at++] = HEX_DIGITS[bytes[i]! & 0xf]!;
  }
  return idText.toString('latin1', 0, 36);
}

/** Every resource id: UUIDv7, time-ordered (monotonic within the process), so newest-first is id-descending. */
export function newId(): string {
  return uuidText(generator.generate().bytes);
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

/** The millisecond a UUIDv7 was drawn in (its first 48 bits). */
export function uuidv7Time(id: string): number {
  return parseInt(id.replace(/-/g, '').slice(0, 12), 16);
}
