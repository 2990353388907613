import { describe, expect, it } from 'vitest';
import { quote } from '../../src/http/serializer.js';

describe('the serializer quote (http/serializer.ts)', () => {
  it('is JSON.stringify for every UTF-16 code unit, alone and inside text', () => {
    for (let c = 0; c <= 0xffff; c++) {
      const ch = String.fromCharCode(c);
      for (const s of [ch, `ab${ch}cd`, `${ch}${ch}`]) {
        const want = JSON.stringify(s);
        if (quote(s) !== want) expect(quote(s), `U+${c.toString(16)}`).toBe(want);
      }
    }
  });

  it('is JSON.stringify for pairs, lone surrogates, empty and long strings', () => {
    const cases = [
      '',
      'plain text',
      '😀',
      'a😀b',
      '\ud83d',
      '\ude00',
      'x\ud83dy',
      '\ude00\ud83d',
      'é ✓',
      '\u2028\u2029',
      '\u007f',
      'q"b\\'.repeat(1000),
    ];
    let seed = 49;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let i = 0; i < 2000; i++) {
      const length = Math.floor(random() * 12);
      const units = Array.from({ length }, () => {
        const r = random();
        return r < 0.5 ? 0x20 + Math.floor(random() * 95) : r < 0.7 ? Math.floor(random() * 0x20) : Math.floor(random() * 0x10000);
      });
      cases.push(String.fromCharCode(...units));
    }
    for (const s of cases) expect(quote(s)).toBe(JSON.stringify(s));
  });
});
