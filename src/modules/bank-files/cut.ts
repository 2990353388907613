import { createHash } from 'node:crypto';
import type { Queryable, Trx, UnitOfWork } from '../../db/client.js';
import type { Environment, Scope } from '../../core/context.js';
import { AppError } from '../../core/errors.js';
import { newId } from '../../lib/ids.js';
import { toLatin } from '../../lib/latin.js';
import { formatAmount } from '../../lib/money.js';
import type { PayeeDetails } from '../../rails/index.js';
import * as transfers from '../transfers/service.js';
import { buildPain001, type Pain001Payment } from './messages.js';
import * as repo from './repo.js';
import { connectionOf } from './connections.js';
import { transportOf, type Transport } from './transport.js';

/** Files out: the connection's unfiled payouts cut into a pain.001, then delivered to the bank. */

/** Our payout ids travel as EndToEndId (35 characters at most): the transfer id without its dashes. */
export const endToEndIdOf = (transferId: string) => transferId.replace(/-/g, '');

/** Which connector's payouts a connection pays: live ones wait for a bank; sandbox ones run the same path. */
const CONNECTORS: Record<Environment, string[]> = { live: ['manual'], sandbox: ['sandbox'] };

const FILE_LIMIT = 5000;

export function checksumOf(content: string) {
  return createHash('sha256').update(content).digest('hex');
}

/** What a payee's details say about the creditor's account and agent. */
function creditorOf(payee: PayeeDetails): Pick<Pain001Payment, 'creditorAccount' | 'creditorBic' | 'creditorBankCode'> {
  return {
    creditorAccount: { iban: payee.iban, accountNumber: payee.iban ? null : (payee.accountNumber ?? payee.phoneNumber) },
    creditorBic: payee.bic,
    creditorBankCode: payee.bic ? null : (payee.routingNumber ?? payee.sortCode ?? payee.institutionCode),
  };
}

export interface CutResult {
  file: repo.FileRow | undefined;
  refused: { transfer_id: string; reason: string }[];
}

/**
 * Cuts a pain.001 of the connection's unfiled payouts, in one transaction: the payouts locked and
 * recorded in the file (each in one file only: the transfer is the key), the document built and
 * stored with its checksum. A payout whose payee cannot be written in the bank's character set
 * is failed (funds released) instead of being sent broken. Delivery is deliverFiles' job.
 */
export async function cutFile(trx: Trx, connectionId: string, now = new Date()): Promise<CutResult> {
  const c = await connectionOf(trx, connectionId, 'update');
  if (c.status !== 'active') throw new AppError('invalid_state_transition', 'The connection is disabled');
  const claimed = await repo.unfiledPayouts(trx, c, CONNECTORS[c.environment], FILE_LIMIT);
  const refused: CutResult['refused'] = [];
  if (claimed.length === 0) return { file: undefined, refused };
  const details = new Map(
    (
      await transfers.transfersByIds(
        trx,
        claimed.map((p) => p.transfer_id),
      )
    ).map((t) => [t.id, t]),
  );
  const payments: FilePayment[] = [];
  const executionDate = now.toISOString().slice(0, 10);
  for (const p of claimed) {
    const made = paymentOf(p, details.get(p.transfer_id), executionDate);
    if ('payment' in made) {
      payments.push(made.payment);
      continue;
    }
    await transfers.applyRailOutcome(trx, made.scope, p.transfer_id, 'failed', made.reason);
    refused.push({ transfer_id: p.transfer_id, reason: made.reason });
  }
  if (payments.length === 0) return { file: undefined, refused };
  const file = await storeFile(trx, c, payments, now);
  return { file, refused };
}

type FilePayment = Pain001Payment & { transferId: string; scope: Scope };
type Claimed = Awaited<ReturnType<typeof repo.unfiledPayouts>>[number];

/**
 * One payout as a payment of the file, or why it cannot be sent: a payee without an account
 * identifier, or a name the bank's character set cannot carry.
 */
function paymentOf(
  p: Claimed,
  transfer: Awaited<ReturnType<typeof transfers.transfersByIds>>[number] | undefined,
  executionDate: string,
): { payment: FilePayment } | { reason: string; scope: Scope } {
  const payee = (typeof p.payee === 'string' ? JSON.parse(p.payee) : p.payee) as PayeeDetails;
  // The payer's own reference, else the description, else our reference: the first the bank's character set can carry.
  const remittance = transfer
    ? ([transfer.client_reference, transfer.description, transfer.id]
        .filter((v): v is string => Boolean(v?.trim()))
        .map((v) => toLatin(v.trim().slice(0, 140)))
        .find((v) => v !== undefined && v.trim() !== '') ?? null)
    : null;
  const name = toLatin(payee.accountName.trim().slice(0, 140));
  const scope = { tenantId: p.tenant_id, environment: p.environment as Environment };
  if (!name?.trim() || (!payee.iban && !payee.accountNumber && !payee.phoneNumber)) {
    const reason = name?.trim() ? 'The payee has no account identifier' : 'The payee name has characters the bank cannot carry';
    return { reason, scope };
  }
  return {
    payment: {
      transferId: p.transfer_id,
      scope,
      endToEndId: endToEndIdOf(p.transfer_id),
      amount: p.amount,
      currency: p.currency,
      executionDate,
      creditorName: name,
      remittance,
      ...creditorOf(payee),
    },
  };
}

/** The pain.001 built and stored with its checksum, and each payment recorded in it. */
async function storeFile(trx: Trx, c: repo.ConnectionRow, payments: FilePayment[], now: Date): Promise<repo.FileRow> {
  const fileId = newId();
  const messageId = `FSAPI${fileId.replace(/-/g, '').slice(0, 30)}`;
  const content = buildPain001({
    messageId,
    createdAt: now,
    initiatingParty: toLatin(c.account_name) ?? 'Platform',
    debtorName: toLatin(c.account_name) ?? 'Platform',
    debtorAccount: { iban: c.iban, accountNumber: c.iban ? null : c.account_number },
    debtorBic: c.bic,
    debtorBankCode: c.bank_code,
    payments,
  });
  const file = await repo.insertFile(trx, {
    id: fileId,
    connection_id: c.id,
    direction: 'out',
    kind: 'pain.001',
    message_id: messageId,
    filename: `pain.001.${messageId}.xml`,
    checksum: checksumOf(content),
    size: Buffer.byteLength(content),
    status: 'created',
    content,
    summary: JSON.stringify({
      payouts: payments.length,
      currency: c.currency,
      total: formatAmount(
        payments.reduce((s, p) => s + p.amount, 0n),
        c.currency,
      ),
    }),
  });
  await repo.insertFilePayouts(
    trx,
    payments.map((p) => ({
      transfer_id: p.transferId,
      tenant_id: p.scope.tenantId,
      environment: p.scope.environment,
      file_id: file.id,
      end_to_end_id: p.endToEndId,
      amount: p.amount,
      currency: p.currency,
    })),
  );
  return file;
}

/**
 * Delivers the connection's files not yet delivered, each then recorded `delivered` with its
 * payouts `submitted` (a file delivered twice after a crash between the two is the same file, same
 * name and message id: the bank's duplicate check drops it).
 */
export async function deliverFiles(unit: UnitOfWork, db: Queryable, connectionId: string, transport?: Transport): Promise<repo.FileRow[]> {
  const c = await connectionOf(db, connectionId);
  const files = await repo.undeliveredFiles(db, c.id);
  if (files.length === 0) return [];
  const t = transport ?? transportOf(c);
  const delivered: repo.FileRow[] = [];
  try {
    for (const f of files) {
      await t.deliver(f.filename, f.content!);
      const done = await unit((trx) => repo.markDelivered(trx, f.id));
      if (done) delivered.push(done);
    }
  } finally {
    if (!transport) await t.close();
  }
  return delivered;
}
