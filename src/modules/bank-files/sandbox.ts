import { join } from 'node:path';
import type { Queryable } from '../../db/client.js';
import { newId } from '../../lib/ids.js';
import { parseAmount } from '../../lib/money.js';
import type * as accounts from '../accounts/service.js';
import { buildCamt054, buildPain002 } from './bank-replies.js';
import * as repo from './repo.js';

/**
 * The sandbox bank: sandbox money moves through the same files as live. A sandbox connection per
 * currency (created on first use, files in DATA_DIR/sandbox-bank) takes the sandbox rail's
 * payouts in pain.001 files, and this bank answers each delivered file with a pain.002 accepting
 * it and a camt.054 debiting it, both imported by the live importer. A developer's simulated
 * inbound transfer is a camt.054 credit through the same importer.
 */
const RAILS = ['sepa', 'swift', 'bank_transfer', 'ach', 'wire', 'fps', 'globalbank'];

export async function sandboxConnection(trx: Queryable, currency: string, dataDir: string): Promise<repo.ConnectionRow> {
  const existing = (await repo.listConnections(trx)).find(
    (c) => c.environment === 'sandbox' && c.currency === currency && c.status === 'active',
  );
  if (existing) return existing;
  const folder = join(dataDir, 'sandbox-bank', currency.toLowerCase());
  await trx
    .insertInto('bank_connections')
    .values({
      id: newId(),
      environment: 'sandbox',
      name: `Sandbox bank ${currency}`,
      account_name: 'FSAPI Sandbox Bank',
      account_number: `SANDBOX${currency}`,
      iban: null,
      bic: 'FSAPXXSBXXX',
      bank_code: null,
      currency,
      rails: JSON.stringify(RAILS),
      transport: 'folder',
      transport_config: JSON.stringify({ outbox: join(folder, 'outbox'), inbox: join(folder, 'inbox') }),
    })
    .onConflict((oc) => oc.doNothing())
    .execute();
  const made = (await repo.listConnections(trx)).find(
    (c) => c.environment === 'sandbox' && c.currency === currency && c.status === 'active',
  );
  if (!made) throw new Error('the sandbox bank connection vanished');
  return made;
}

const platformAccount = (c: repo.ConnectionRow) => ({ iban: c.iban, accountNumber: c.iban ? null : c.account_number });

/** The sandbox bank's answer to a delivered pain.001: every payout accepted (pain.002) and debited (camt.054). */
export function sandboxAnswers(c: repo.ConnectionRow, file: repo.FileRow, payouts: repo.FilePayoutRow[]) {
  const today = new Date().toISOString().slice(0, 10);
  const pain002 = buildPain002({
    messageId: `SBX-STS-${file.message_id}`.slice(0, 35),
    createdAt: new Date(),
    originalMessageId: file.message_id,
    groupStatus: 'ACCP',
    transactions: payouts.map((p) => ({ endToEndId: p.end_to_end_id, status: 'ACSC' })),
  });
  const camt054 = buildCamt054({
    messageId: `SBX-NTF-${file.message_id}`.slice(0, 35),
    createdAt: new Date(),
    reportId: file.message_id.slice(0, 35),
    account: platformAccount(c),
    currency: c.currency,
    entries: payouts.map((p) => ({
      ref: `D${p.end_to_end_id}`,
      amount: p.amount,
      currency: p.currency,
      direction: 'debit' as const,
      bookingDate: today,
      endToEndId: p.end_to_end_id,
    })),
  });
  return [
    { name: `pain.002.${file.message_id}.xml`, content: pain002 },
    { name: `camt.054.${file.message_id}.xml`, content: camt054 },
  ];
}

export interface SimulatedCredit {
  amount: string | number;
  payer_name?: string;
  reference?: string;
}

/** A developer's inbound transfer as the bank would notify it: a camt.054 credit naming the account's bank details. */
export function simulatedCreditFile(c: repo.ConnectionRow, account: accounts.AccountRow, body: SimulatedCredit) {
  const amount = parseAmount(body.amount, account.currency);
  const ref = `SIM${newId().replace(/-/g, '')}`.slice(0, 35);
  const iban = (account.bank_details as { iban?: string | null }).iban ?? null;
  const content = buildCamt054({
    messageId: ref,
    createdAt: new Date(),
    reportId: ref,
    account: platformAccount(c),
    currency: account.currency,
    entries: [
      {
        ref,
        amount,
        currency: account.currency,
        direction: 'credit',
        bookingDate: new Date().toISOString().slice(0, 10),
        creditorAccount: iban ? { iban, accountNumber: null } : { iban: null, accountNumber: account.account_number },
        ...(body.payer_name ? { payerName: body.payer_name } : {}),
        ...(body.reference ? { reference: body.reference } : {}),
      },
    ],
  });
  return { ref, amount, name: `camt.054.${ref}.xml`, content };
}
