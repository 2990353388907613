import { describe, expect, it } from 'vitest';
import { isUuid, newId, uuidv7LowerBound } from './ids.js';

describe('newId', () => {
  it('makes distinct, increasing UUIDv7 ids across many refills of its random buffer', () => {
    const before = uuidv7LowerBound(new Date());
    const ids = Array.from({ length: 10_000 }, () => newId());
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    for (const id of [ids[0]!, ids.at(-1)!]) {
      expect(isUuid(id)).toBe(true);
      expect(id[14]).toBe('7'); // version
      expect('89ab').toContain(id[19]); // RFC 9562 variant
      expect(id >= before).toBe(true);
    }
  });
});
