import { z } from 'zod';

const CountryFilter = z
  .string()
  .regex(/^[A-Za-z]{2}$/, 'Must be a two-letter ISO 3166-1 alpha-2 code such as NG')
  .transform((s) => s.toUpperCase());
const CurrencyFilter = z
  .string()
  .regex(/^[A-Za-z]{3}$/, 'Must be a three-letter ISO 4217 code such as NGN')
  .transform((s) => s.toUpperCase());
const NameFilter = z.string().trim().min(1).max(100);

export const TransferRatesQuery = z.strictObject({
  page: z.coerce.number().int().min(1).max(1_000_000).default(1),
  items_per_page: z.coerce.number().int().min(1).max(100).default(10),
  country_iso_code: CountryFilter.optional(),
  currency: CurrencyFilter.optional(),
});
export type TransferRatesQuery = z.infer<typeof TransferRatesQuery>;

export const TransferCurrenciesQuery = z.strictObject({ code: CurrencyFilter.optional(), name: NameFilter.optional() });
export type TransferCurrenciesQuery = z.infer<typeof TransferCurrenciesQuery>;

export const TransferCountriesQuery = z.strictObject({ iso_code: CountryFilter.optional() });
export type TransferCountriesQuery = z.infer<typeof TransferCountriesQuery>;

export const AddressCountriesQuery = z.strictObject({ iso_code: CountryFilter.optional(), name: NameFilter.optional() });
export type AddressCountriesQuery = z.infer<typeof AddressCountriesQuery>;

export const TransferRate = z
  .object({
    country_iso_code: z.string(),
    currency: z.string(),
    eur_rate: z
      .string()
      .optional()
      .describe(
        'Units of `currency` a payee receives per 1 EUR sent (customer rate, spread included); absent when EUR cannot be converted',
      ),
    usd_rate: z
      .string()
      .optional()
      .describe(
        'Units of `currency` a payee receives per 1 USD sent (customer rate, spread included); absent when USD cannot be converted',
      ),
  })
  .meta({ id: 'TransferRate' });

export const TransferRatePage = z.object({
  items: z.array(TransferRate),
  page: z.number().int(),
  items_per_page: z.number().int(),
  total_pages: z.number().int(),
  total_items: z.number().int(),
});

export const TransferCurrency = z.object({ code: z.string(), name: z.string() }).meta({ id: 'TransferCurrency' });

export const TransferCountry = z
  .object({
    currency_code: z.string().nullable().describe('The currency payees in this country are paid in'),
    iso3_code: z.string(),
    iso_code: z.string(),
    name: z.string(),
  })
  .meta({ id: 'TransferCountryItem' });

export const AddressCountry = z
  .object({
    iso_code: z.string(),
    name: z.string(),
    states: z.array(z.object({ code: z.string(), name: z.string() })).describe('ISO 3166-2 subdivisions; empty where the country has none'),
  })
  .meta({ id: 'TransferCountry' });
