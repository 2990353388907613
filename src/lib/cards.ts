/** Pure card-number rules for card collections: Luhn, brand, expiry. Never log what goes in. */

export function luhnValid(pan: string): boolean {
  if (!/^\d{12,19}$/.test(pan)) return false;
  let sum = 0;
  for (let i = 0; i < pan.length; i++) {
    let d = Number(pan[pan.length - 1 - i]);
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

export type CardBrand = 'visa' | 'mastercard' | 'amex' | 'discover' | 'diners' | 'jcb' | 'unknown';

export function cardBrand(pan: string): CardBrand {
  if (/^4/.test(pan)) return 'visa';
  if (/^(5[1-5]|2(2[2-9]|[3-6]\d|7[01]|720))/.test(pan)) return 'mastercard';
  if (/^3[47]/.test(pan)) return 'amex';
  if (/^(6011|65|64[4-9])/.test(pan)) return 'discover';
  if (/^3(0[0-5]|[68])/.test(pan)) return 'diners';
  if (/^35(2[89]|[3-8])/.test(pan)) return 'jcb';
  return 'unknown';
}

/** `MM/YY` (or `MM/YYYY`) not in the past: {month, year} with a 4-digit year, else undefined. */
export function parseExpiry(expiry: string, now = new Date()): { month: string; year: string } | undefined {
  const m = /^(0[1-9]|1[0-2])\/(\d{2}|\d{4})$/.exec(expiry.trim());
  if (!m) return undefined;
  const year = m[2]!.length === 2 ? `20${m[2]}` : m[2]!;
  const endOfMonth = new Date(Date.UTC(Number(year), Number(m[1]), 1));
  if (endOfMonth <= now) return undefined;
  return { month: m[1]!, year };
}

/** A card expiring within 60 days (the saved-card list flags it). */
export function expiringSoon(month: string, year: string, now = new Date()): boolean {
  const end = Date.UTC(Number(year), Number(month), 1);
  return end - now.getTime() < 60 * 86_400_000;
}

export function isCvv(cvv: string): boolean {
  return /^\d{3,4}$/.test(cvv);
}
