import { UUID, V7Generator } from 'uuidv7';
import { describe, expect, it } from 'vitest';
import { isUuid, newId, uuidText } from '../../src/lib/ids.js';

describe('ids', () => {
  it('writes a UUID’s text as the library does', () => {
    const generator = new V7Generator();
    const samples = [
      ...Array.from({ length: 500 }, () => generator.generate()),
      UUID.ofInner(new Uint8Array(16)),
      UUID.ofInner(new Uint8Array(16).fill(0xff)),
      UUID.ofInner(Uint8Array.from({ length: 16 }, (_, i) => i * 17)),
    ];
    for (const uuid of samples) expect(uuidText(uuid.bytes)).toBe(uuid.toString());
  });

  it('makes distinct, time-ordered UUIDv7 ids', () => {
    const ids = Array.from({ length: 1000 }, () => newId());
    expect(ids.every(isUuid)).toBe(true);
    expect(ids.every((id) => id[14] === '7')).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
  });
});
