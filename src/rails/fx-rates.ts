/**
 * Where international payouts get their exchange rate. The FX module will provide the real one;
 * until then the sandbox provider serves fixed, configurable mid rates quoted per USD and
 * crosses them through USD. Rates are decimal strings, never floats.
 */
export interface FxRateProvider {
  /** Mid rate: 1 unit of `base` buys this many units of `quote`, or undefined when unknown. */
  midRate(base: string, quote: string): Promise<string | undefined>;
}

/** A decimal string as an exact fraction numerator / 10^scale. */
export interface Decimal {
  num: bigint;
  scale: number;
}

export function parseDecimal(s: string): Decimal {
  const m = /^(\d+)(?:\.(\d+))?$/.exec(s);
  if (!m) throw new Error(`not a decimal: ${s}`);
  const frac = m[2] ?? '';
  return { num: BigInt(m[1]! + frac), scale: frac.length };
}

export function formatDecimal(d: Decimal, maxScale = 10): string {
  let { num, scale } = d;
  if (scale > maxScale) {
    num = num / 10n ** BigInt(scale - maxScale);
    scale = maxScale;
  }
  const digits = num.toString().padStart(scale + 1, '0');
  const text = scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
  return scale === 0 ? text : text.replace(/\.?0+$/, '');
}

const SCALE = 12;

/** a / b with SCALE fraction digits, rounded down. */
function divide(a: Decimal, b: Decimal): Decimal {
  const num = (a.num * 10n ** BigInt(b.scale + SCALE)) / (b.num * 10n ** BigInt(a.scale));
  return { num, scale: SCALE };
}

export class SandboxFxRates implements FxRateProvider {
  private readonly perUsd: Map<string, Decimal>;
  constructor(ratesPerUsd: Record<string, string>) {
    this.perUsd = new Map(Object.entries({ USD: '1', ...ratesPerUsd }).map(([c, r]) => [c, parseDecimal(r)]));
  }

  async midRate(base: string, quote: string): Promise<string | undefined> {
    const b = this.perUsd.get(base);
    const q = this.perUsd.get(quote);
    if (!b || !q) return undefined;
    return formatDecimal(divide(q, b));
  }
}

/**
 * The customer's rate: the mid rate less a spread of `spreadBps`, rounded down to 10 decimals
 * (the spread is the house's margin; rounding down never pays out more than was bought).
 */
export function applySpread(mid: string, spreadBps: number): string {
  const d = parseDecimal(mid);
  return formatDecimal({ num: d.num * BigInt(10_000 - spreadBps), scale: d.scale + 4 });
}

/**
 * `amount` minor units of a currency with exponent `fromExp` converted at `rate` into minor units
 * of a currency with exponent `toExp`, rounded down. The remainder stays in the FX position, so
 * no minor unit is created: each currency's legs still sum to zero.
 */
export function convertMinor(amount: bigint, rate: string, fromExp: number, toExp: number): bigint {
  const r = parseDecimal(rate);
  const numerator = amount * r.num * 10n ** BigInt(toExp);
  const denominator = 10n ** BigInt(r.scale + fromExp);
  return numerator / denominator;
}
