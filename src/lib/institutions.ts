import { readFileSync } from 'node:fs';
import { sha256Hex } from './crypto.js';
import { parseAmount } from './money.js';

/**
 * Payee institutions (banks and mobile money operators) from the maintained data file
 * `data/institutions.json`. Loaded once; ids are derived from country, type and code so that a
 * stored external account keeps pointing at the same institution across releases.
 */
export type InstitutionType = 'bank' | 'mobile_money';

export interface Institution {
  id: string;
  name: string;
  code: string;
  country: string;
  currency: string;
  type: InstitutionType;
  accountNumberType: 'bank_account_number' | 'iban' | 'phone_number';
  /** Transfer bounds in the institution's currency, minor units. */
  minAmount: bigint;
  maxAmount: bigint;
  /** Mobile money: national-number prefixes of the operator's wallets. */
  prefixes: readonly string[];
}

interface DataFile {
  limits: Record<string, { currency: string } & Partial<Record<InstitutionType, [string, string]>>>;
  institutions: { country: string; type: InstitutionType; code: string; name: string; prefixes?: string[] }[];
}

const EURO_AREA = new Set([
  'AT',
  'BE',
  'CY',
  'DE',
  'EE',
  'ES',
  'FI',
  'FR',
  'GR',
  'HR',
  'IE',
  'IT',
  'LT',
  'LU',
  'LV',
  'MT',
  'NL',
  'PT',
  'SI',
  'SK',
]);

/** A stable UUID (version 8, RFC 9562 custom) derived from the institution's natural key. */
function stableId(key: string): string {
  const h = sha256Hex(key).slice(0, 32).split('');
  h[12] = '8';
  h[16] = ((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16);
  const s = h.join('');
  return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20, 32)}`;
}

function load(): Institution[] {
  const file = JSON.parse(readFileSync(new URL('./data/institutions.json', import.meta.url), 'utf8')) as DataFile;
  return file.institutions.map((row) => {
    const limits = file.limits[EURO_AREA.has(row.country) ? 'EU' : row.country];
    const bounds = limits?.[row.type];
    if (!limits || !bounds) throw new Error(`institutions.json: no ${row.type} limits for ${row.country}`);
    return {
      id: stableId(`${row.country}:${row.type}:${row.code}`),
      name: row.name,
      code: row.code,
      country: row.country,
      currency: limits.currency,
      type: row.type,
      accountNumberType: row.type === 'mobile_money' ? 'phone_number' : EURO_AREA.has(row.country) ? 'iban' : 'bank_account_number',
      minAmount: parseAmount(bounds[0], limits.currency),
      maxAmount: parseAmount(bounds[1], limits.currency),
      prefixes: row.prefixes ?? [],
    };
  });
}

const ALL: readonly Institution[] = load();
const BY_ID = new Map(ALL.map((i) => [i.id, i]));

export function allInstitutions(): readonly Institution[] {
  return ALL;
}

export function findInstitution(id: string): Institution | undefined {
  return BY_ID.get(id);
}

/** Institutions of a country and/or type, sorted by country then name (a stable listing order). */
export function listInstitutions(filter: { country?: string; type?: InstitutionType }): Institution[] {
  return ALL.filter((i) => (!filter.country || i.country === filter.country) && (!filter.type || i.type === filter.type)).sort(
    (a, b) => a.country.localeCompare(b.country) || a.name.localeCompare(b.name),
  );
}
