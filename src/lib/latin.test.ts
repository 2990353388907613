import { describe, expect, it } from 'vitest';
import { latinOrRefuse, toLatin } from './latin.js';

describe('the ISO 20022 Latin set', () => {
  it('keeps what the set has and transliterates what has a Latin spelling', () => {
    expect(toLatin("O'Neil (Ltd) 12/3-4?:.,+")).toBe("O'Neil (Ltd) 12/3-4?:.,+");
    expect(toLatin('Zoë Ångström & Søn')).toBe('Zoe Angstrom + Son');
    expect(toLatin('Straße Œuvre')).toBe('Strasse OEuvre');
    expect(toLatin('“Quoted” — dash_under')).toBe("'Quoted' - dash-under");
  });

  it('refuses what has none, naming the field', () => {
    expect(toLatin('王小明')).toBeUndefined();
    expect(toLatin('Иван')).toBeUndefined();
    expect(() => latinOrRefuse('Иван', 'account_name')).toThrow(expect.objectContaining({ code: 'validation_failed' }));
  });
});
