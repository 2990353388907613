import { iso31661, iso31662 } from 'iso-3166';
import type { Config } from '../../config.js';
import type { Queryable } from '../../db/client.js';
import type { RequestContext, Scope } from '../../core/context.js';
import { AppError } from '../../core/errors.js';
import { allInstitutions } from '../../lib/institutions.js';
import { currencyName, getRate, supportedCurrencies } from '../fx/service.js';
import type { AddressCountriesQuery, TransferCountriesQuery, TransferCurrenciesQuery, TransferRatesQuery } from './schema.js';

/**
 * Reference data about where money can be sent (`/v1/transfer/*`), derived from the same sources
 * that decide a real payout, so the lists never promise what a transfer would refuse:
 * - a payout country and its currency: the institutions data file (every payee is a bank or
 *   mobile money operator of a country, paid in that country's currency);
 * - a payout currency: a payee currency that the FX module can also price, so any account can
 *   pay it (a same-currency payout needs no rate; a cross-currency one converts through FX);
 * - the rates: the FX module's current customer rate (the business's spread, the sandbox market
 *   of /v1/simulations/fx/rates), the same rate an international payout uses.
 */
type SettingsScope = Scope & Pick<RequestContext, 'settings'>;

interface PayoutCountry {
  iso_code: string;
  iso3_code: string;
  name: string;
  currency: string;
}

const COUNTRY = new Map(iso31661.map((c) => [c.alpha2, c]));

/** Payee currencies of the other payee types (ACH/wire USD, SEPA EUR, FPS GBP, SWIFT USD/EUR/GBP). */
const NON_INSTITUTION_CURRENCIES = ['USD', 'EUR', 'GBP'];

function payoutCountries(config: Config): PayoutCountry[] {
  const priced = new Set(supportedCurrencies(config));
  const seen = new Map<string, PayoutCountry>();
  for (const inst of allInstitutions()) {
    const country = COUNTRY.get(inst.country);
    if (!country || seen.has(inst.country) || !priced.has(inst.currency)) continue;
    seen.set(inst.country, { iso_code: inst.country, iso3_code: country.alpha3, name: country.name, currency: inst.currency });
  }
  return [...seen.values()].sort((a, b) => a.iso_code.localeCompare(b.iso_code));
}

export function listCurrencies(query: TransferCurrenciesQuery, config: Config) {
  const payee = new Set([...allInstitutions().map((i) => i.currency), ...NON_INSTITUTION_CURRENCIES]);
  const name = query.name?.toLowerCase();
  const currencies = supportedCurrencies(config)
    .filter((code) => payee.has(code))
    .sort()
    .map((code) => ({ code, name: currencyName(code) as string }))
    .filter((c) => (!query.code || c.code === query.code) && (!name || c.name.toLowerCase().includes(name)));
  return { currencies };
}

export function listCountries(query: TransferCountriesQuery, config: Config) {
  const countries = payoutCountries(config)
    .filter((c) => !query.iso_code || c.iso_code === query.iso_code)
    .map((c) => ({ currency_code: c.currency, iso3_code: c.iso3_code, iso_code: c.iso_code, name: c.name }));
  return { countries };
}

const STATES = new Map<string, { code: string; name: string }[]>();
for (const s of iso31662) {
  const list = STATES.get(s.parent) ?? [];
  list.push({ code: s.code, name: s.name });
  STATES.set(s.parent, list);
}

/**
 * Countries a recipient address may be in: every ISO 3166-1 country, with the ISO 3166-2
 * subdivisions that an address's `state` is checked against (the same table as the validator).
 */
export function listAddressCountries(query: AddressCountriesQuery) {
  const name = query.name?.toLowerCase();
  const countries = iso31661
    .filter((c) => (!query.iso_code || c.alpha2 === query.iso_code) && (!name || c.name.toLowerCase().includes(name)))
    .sort((a, b) => a.alpha2.localeCompare(b.alpha2))
    .map((c) => ({
      iso_code: c.alpha2,
      name: c.name,
      states: [...(STATES.get(c.alpha2) ?? [])].sort((a, b) => a.code.localeCompare(b.code)),
    }));
  return { countries };
}

/** The customer rate from `base` into `quote`, or undefined when FX cannot price the pair. */
async function rateInto(db: Queryable, ctx: SettingsScope, config: Config, base: string, quote: string): Promise<string | undefined> {
  if (base === quote) return '1';
  try {
    return (await getRate(db, ctx, base, quote, 'sell', config)).rate;
  } catch (err) {
    if (err instanceof AppError && err.code === 'validation_failed') return undefined;
    throw err;
  }
}

export async function listRates(db: Queryable, ctx: SettingsScope, query: TransferRatesQuery, config: Config) {
  const rows = payoutCountries(config).filter(
    (c) => (!query.country_iso_code || c.iso_code === query.country_iso_code) && (!query.currency || c.currency === query.currency),
  );
  const size = query.items_per_page;
  const pageRows = rows.slice((query.page - 1) * size, query.page * size);
  const items = [];
  for (const c of pageRows) {
    const eur = await rateInto(db, ctx, config, 'EUR', c.currency);
    const usd = await rateInto(db, ctx, config, 'USD', c.currency);
    // Absent, never null, where a rate cannot be given (docs/api-rules.md#absent-values).
    items.push({
      country_iso_code: c.iso_code,
      currency: c.currency,
      ...(eur ? { eur_rate: eur } : {}),
      ...(usd ? { usd_rate: usd } : {}),
    });
  }
  return { items, page: query.page, items_per_page: size, total_pages: Math.ceil(rows.length / size), total_items: rows.length };
}
