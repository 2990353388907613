import { isIP } from 'node:net';
import type { Config } from '../../config.js';
import type { KycLevel } from '../kyc/schema.js';
import type { BusinessSettings } from '../../core/settings.js';

/**
 * The product features a customer can activate, and what each needs: an approved KYC level and
 * some provider data. The reference's ids (crypto_wallet excluded: fiat only) plus
 * `physical_cards`, plus a `<ccy>_account` for every supported currency that is not one of the
 * business's home currencies (docs/api-rules.md#features).
 */
export type FieldType = 'number' | 'string' | 'ip_address';

export interface ProviderField {
  key: string;
  fieldType: FieldType;
  description: string;
  /** Asked for and checked when given; its absence is recorded (provider_data.not_given) rather than refused. */
  optional?: boolean;
}

export interface FeatureDef {
  feature_id: string;
  name: string;
  description: string;
  kycLevel: KycLevel;
  providerData: ProviderField[];
}

const ANNUAL: ProviderField = {
  key: 'annual_remuneration',
  fieldType: 'number',
  description: 'Annual income of the customer, a positive number',
};
const MONTHLY: ProviderField = {
  key: 'estimated_monthly_limit',
  fieldType: 'number',
  description: 'Expected monthly spend or volume, a positive number',
};
const IP: ProviderField = { key: 'ip_address', fieldType: 'ip_address', description: "The customer's IP address (IPv4 or IPv6)" };
const FUNDS: ProviderField = {
  key: 'source_of_funds',
  fieldType: 'string',
  description: 'Where the money comes from (e.g. salary, business revenue)',
};

const FIXED: FeatureDef[] = [
  {
    feature_id: 'virtual_cards',
    name: 'Cards',
    description: 'Issue and manage virtual debit cards',
    kycLevel: 'basic',
    providerData: [ANNUAL, MONTHLY, IP],
  },
  {
    feature_id: 'physical_cards',
    name: 'Physical cards',
    description: 'Issue and manage physical debit cards',
    kycLevel: 'intermediate',
    providerData: [ANNUAL, MONTHLY, IP],
  },
  {
    feature_id: 'international_transfers',
    name: 'Payout',
    description: 'Send and receive international wire transfers',
    kycLevel: 'intermediate',
    // The reference's own activation example sends neither: intermediate KYC is the gate.
    providerData: [
      { ...FUNDS, optional: true },
      { ...MONTHLY, optional: true },
    ],
  },
];

/** Home currencies of a business: its `home_currencies` setting, else HOME_CURRENCIES. */
export function homeCurrencies(settings: BusinessSettings, config: Config): string[] {
  return settings.home_currencies ?? config.HOME_CURRENCIES;
}

export function catalogue(settings: BusinessSettings, config: Config): FeatureDef[] {
  const home = new Set(homeCurrencies(settings, config));
  // The reference's eur/usd/gbp_account always exist; other currencies only when not home.
  const currencies = new Set(['EUR', 'USD', 'GBP', ...config.SUPPORTED_CURRENCIES.filter((c) => !home.has(c))]);
  const accounts: FeatureDef[] = [...currencies].map((ccy) => ({
    feature_id: `${ccy.toLowerCase()}_account`,
    name: `${ccy} Account`,
    description: `Create and manage ${ccy} currency accounts${home.has(ccy) ? ' (a home currency: available without activation)' : ''}`,
    kycLevel: 'basic',
    providerData: home.has(ccy) ? [] : [FUNDS],
  }));
  return [...FIXED, ...accounts].sort((a, b) => a.feature_id.localeCompare(b.feature_id));
}

/** Checks one provider_data value; returns a message when it is not acceptable. */
export function invalidValue(field: ProviderField, value: unknown): string | undefined {
  switch (field.fieldType) {
    case 'number': {
      const ok =
        (typeof value === 'number' && Number.isFinite(value) && value > 0) ||
        (typeof value === 'string' && /^\d{1,15}(\.\d{1,6})?$/.test(value) && Number(value) > 0);
      return ok ? undefined : `${field.key} is required and must be a positive number`;
    }
    case 'ip_address':
      return typeof value === 'string' && isIP(value) !== 0 ? undefined : `${field.key} must be an IPv4 or IPv6 address`;
    case 'string':
      return typeof value === 'string' && value.trim().length > 0 && value.length <= 255
        ? undefined
        : `${field.key} must be a non-empty text of at most 255 characters`;
  }
}
