import { describe, expect, it } from 'vitest';
import { hasLongDigitRun } from '../../src/lib/redact.js';

/** The loop over the characters `hasLongDigitRun` was: 13 digits in a row, one space or dash allowed between two. */
function reference(value: string): boolean {
  let run = 0;
  let gap = false;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      if (++run >= 13) return true;
      gap = false;
    } else if ((c === 32 || c === 45) && run > 0 && !gap) gap = true;
    else {
      run = 0;
      gap = false;
    }
  }
  return false;
}

describe('hasLongDigitRun', () => {
  it('answers as the loop over the characters did', () => {
    const cases = [
      '4242424242424242',
      '4242 4242 4242 4242',
      '4242-4242-4242-4242',
      '424242424242',
      '4242  4242 4242 4242',
      '4242 -4242-4242-4242',
      ' 1234567890123',
      '-1234567890123-',
      '01a23798-6257-7710-a293',
      '01a23798-62a7-7710-a293',
      '１２３４５６７８９０１２３',
      '',
    ];
    for (const value of cases) expect(hasLongDigitRun(value), value).toBe(reference(value));
    // Strings of digits, separators and letters, from a fixed seed.
    let seed = 49;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    const alphabet = ['1', '7', '0', ' ', '-', 'a', '\n', '_'];
    for (let n = 0; n < 20_000; n++) {
      let value = '';
      for (let length = next() % 40; length > 0; length--) value += alphabet[next() % (next() % 3 === 0 ? alphabet.length : 5)];
      expect(hasLongDigitRun(value), value).toBe(reference(value));
    }
  });
});
