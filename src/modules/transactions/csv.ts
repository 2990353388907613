import type { TransactionResponse } from './schema.js';

const COLUMNS = [
  'id',
  'date_created',
  'account_id',
  'customer_id',
  'direction',
  'transaction_type',
  'channel',
  'status',
  'currency',
  'amount',
  'fee',
  'balance_before',
  'balance_after',
  'reference',
  'client_reference',
  'sending_account_id',
  'receiving_account_id',
  'description',
] as const satisfies readonly (keyof TransactionResponse)[];

/** A number as we write amounts and balances (`-12.50`): the only cells left as they are. */
const NUMERIC = /^-?\d+(?:\.\d+)?$/;

/**
 * RFC 4180 quoting, and a leading apostrophe on text that a spreadsheet would run as a formula
 * (=, +, -, @, tab, CR): descriptions and references are client-supplied, and `-1+HYPERLINK(…)`
 * starts like a number.
 */
export function cell(value: string | null): string {
  if (value === null) return '';
  const safe = /^[=+\-@\t\r]/.test(value) && !NUMERIC.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

export const csvHeader = () => `${COLUMNS.join(',')}\r\n`;

export const csvLine = (t: TransactionResponse) => `${COLUMNS.map((c) => cell(t[c] as string | null)).join(',')}\r\n`;
