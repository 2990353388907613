import type { CompiledQuery } from 'kysely';
import type { Queryable } from '../db/client.js';
import type { LedgerScope } from '../ledger/index.js';
import { crossRate, invertRate, parseRate } from '../lib/decimal.js';

/**
 * The FX rate connector. A source answers mid-market rates (quote-currency units per base unit,
 * fixed point with 12 decimals, see modules/fx/decimal.ts); the FX module adds the business's
 * spread and fee. A live provider implements RateSource and is chosen in `rateSourceFor`.
 */
export interface MidRate {
  mid: bigint;
  timestamp: Date;
}

/** Mid rates for one business and environment, read once per request or worker batch. */
export interface RateBook {
  mid(base: string, quote: string): MidRate | undefined;
}

export interface RateSource {
  readonly name: string;
  /**
   * The book of one business: the statement that reads it, which the caller runs inside its
   * database transaction, alone or together with others (db/pipeline.ts), and how to read its
   * rows; `statement` is undefined for a source that reads nothing. A live provider answers from
   * rates it keeps fresh in the background (a worker job), never from a network call here, so no
   * transaction waits on the network.
   */
  plan(db: Queryable, scope: LedgerScope): RatePlan;
}

export interface RatePlan {
  statement: CompiledQuery<unknown> | undefined;
  read(rows: unknown[]): RateBook;
}

/** Where the sandbox keeps its simulated rates: the statement that reads a business's, and how to read its rows. */
export interface OverrideStore {
  statement(db: Queryable, scope: LedgerScope): CompiledQuery<unknown>;
  read(rows: unknown[]): RateOverride[];
}

/** A rate set through `POST /v1/simulations/fx/rates` (sandbox). */
export interface RateOverride {
  base: string;
  quote: string;
  rate: bigint;
  updatedAt: Date;
}

/**
 * Sensible default mid rates, as units of each currency per 1 USD (late-2025 orders of magnitude).
 * Every other pair is the cross rate through USD. Sandbox and, until a live provider is plugged
 * in, live use these.
 */
export const DEFAULT_UNITS_PER_USD: Record<string, string> = {
  USD: '1',
  EUR: '0.92',
  GBP: '0.79',
  NGN: '1550',
  GHS: '15.5',
  KES: '129.5',
  UGX: '3700',
  ZAR: '18.2',
  XOF: '603.5',
  XAF: '603.5',
  MXN: '17.1',
  CAD: '1.38',
  AUD: '1.53',
  JPY: '150',
  CHF: '0.88',
  CNY: '7.2',
  INR: '84',
  TZS: '2700',
  RWF: '1350',
  EGP: '49',
  MAD: '10',
  BWP: '13.6',
  ZMW: '26.5',
};

const DEFAULTS = new Map(Object.entries(DEFAULT_UNITS_PER_USD).map(([ccy, text]) => [ccy, parseRate(text)]));

/** The default book: cross rates through USD, timestamped now. */
export function defaultMid(base: string, quote: string, now = new Date()): MidRate | undefined {
  const b = DEFAULTS.get(base);
  const q = DEFAULTS.get(quote);
  if (b === undefined || q === undefined || base === quote) return undefined;
  return { mid: crossRate(b, q), timestamp: now };
}

/**
 * Sandbox: the business's simulated rates win, then the reverse of a simulated pair (1 / rate),
 * then the defaults. Setting USD/NGN does not move EUR/NGN: each pair is driven on its own.
 */
export class SandboxRateSource implements RateSource {
  readonly name = 'sandbox';
  constructor(private readonly overrides: OverrideStore) {}

  plan(db: Queryable, scope: LedgerScope): RatePlan {
    return { statement: this.overrides.statement(db, scope), read: (rows) => sandboxBook(this.overrides.read(rows)) };
  }
}

function sandboxBook(overrides: RateOverride[]): RateBook {
  const set = new Map<string, RateOverride>();
  for (const o of overrides) set.set(`${o.base}/${o.quote}`, o);
  const now = new Date();
  return {
    mid(base, quote) {
      if (base === quote) return undefined;
      const direct = set.get(`${base}/${quote}`);
      if (direct) return { mid: direct.rate, timestamp: direct.updatedAt };
      const reverse = set.get(`${quote}/${base}`);
      if (reverse) return { mid: invertRate(reverse.rate), timestamp: reverse.updatedAt };
      return defaultMid(base, quote, now);
    },
  };
}

/**
 * Live: until a market-data provider is configured, the default book (an operator replaces this
 * class with a provider client; nothing else changes).
 */
export class StaticRateSource implements RateSource {
  readonly name = 'static';
  plan(): RatePlan {
    return { statement: undefined, read: staticBook };
  }
}

function staticBook(): RateBook {
  const now = new Date();
  return { mid: (base, quote) => defaultMid(base, quote, now) };
}
