import { join } from 'node:path';
import { parseAmount } from '../../src/lib/money.js';
import { buildCamt054, type CashEntryInput } from '../../src/modules/bank-files/bank-replies.js';

/** The platform's NGN account at the sponsor bank in the tests that import files by hand. */
export const PLATFORM = { iban: null, accountNumber: '0987654321' };

/** An NGN credit booked today to `accountNumber`, as a bank's camt line carries it. */
export function ngnCredit(ref: string, amount: string, accountNumber: string, more: Partial<CashEntryInput> = {}): CashEntryInput {
  return {
    ref,
    amount: parseAmount(amount, 'NGN'),
    currency: 'NGN',
    direction: 'credit',
    bookingDate: new Date().toISOString().slice(0, 10),
    creditorAccount: { iban: null, accountNumber },
    ...more,
  };
}

/** A camt.054 notification of these entries on the platform's account. */
export function camt054(messageId: string, entries: CashEntryInput[]): string {
  return buildCamt054({ messageId, createdAt: new Date(), reportId: messageId, account: PLATFORM, currency: 'NGN', entries });
}

/** The operator API's body for an NGN connection to the platform's account over a folder in `dir`. */
export function folderConnection(dir: string) {
  return {
    name: 'Folder Bank',
    account_name: 'FSAPI Platform Ltd',
    account_number: PLATFORM.accountNumber,
    bic: 'FSAPNGLAXXX',
    currency: 'NGN',
    rails: ['bank_transfer'],
    transport: { type: 'folder', outbox: join(dir, 'out'), inbox: join(dir, 'in') },
  };
}
