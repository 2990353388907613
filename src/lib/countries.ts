import { iso31661, iso31661Alpha3ToAlpha2, iso31662 } from 'iso-3166';

const COUNTRIES = new Set(iso31661.map((c) => c.alpha2));
const SUBDIVISIONS = new Set(iso31662.map((s) => s.code));

export function isCountry(code: string): boolean {
  return COUNTRIES.has(code);
}

export function isAlpha3Country(code: string): boolean {
  return code in iso31661Alpha3ToAlpha2;
}

/** ISO 3166-2 code that exists and belongs to the country (`NG-LA` with `NG`). */
export function isStateOf(state: string, country: string): boolean {
  return SUBDIVISIONS.has(state) && state.startsWith(`${country}-`);
}
