import { AppError } from '../core/errors.js';

/**
 * The ISO 20022 Latin character set (the SWIFT/EPC "basic Latin" subset every bank accepts):
 * letters, digits and / - ? : ( ) . , ' + and space.
 */
const LATIN = /^[A-Za-z0-9/\-?:().,'+ ]*$/;

const SPECIAL: Record<string, string> = {
  ß: 'ss',
  Æ: 'AE',
  æ: 'ae',
  Ø: 'O',
  ø: 'o',
  Œ: 'OE',
  œ: 'oe',
  Þ: 'TH',
  þ: 'th',
  Ð: 'D',
  ð: 'd',
  Ł: 'L',
  ł: 'l',
  '&': '+',
  _: '-',
  '"': "'",
  '’': "'",
  '‘': "'",
  '“': "'",
  '”': "'",
  '–': '-',
  '—': '-',
  '@': '(at)',
  '#': '',
  '*': '.',
  ';': ',',
  '!': '.',
  '\n': ' ',
  '\t': ' ',
};

/**
 * Text as the bank will take it: accents removed (é → e), a few letters spelt out (ß → ss), and
 * common punctuation mapped; `undefined` when something remains that has no Latin spelling
 * (another script), so the caller refuses it instead of sending it broken.
 */
export function toLatin(value: string): string | undefined {
  const out = [...value.normalize('NFD').replace(/[\u0300-\u036f]/g, '')].map((c) => SPECIAL[c] ?? c).join('');
  return LATIN.test(out) ? out : undefined;
}

/** toLatin, or the clear refusal naming the field. */
export function latinOrRefuse(value: string, field: string): string {
  const out = toLatin(value);
  if (out === undefined) {
    throw new AppError('validation_failed', `${field} has characters the bank cannot carry`, [
      { field, code: 'unsupported_characters', message: "Use Latin letters, digits and / - ? : ( ) . , ' + (accents are removed)" },
    ]);
  }
  return out;
}
