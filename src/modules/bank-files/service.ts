import type { Queryable, Trx, UnitOfWork } from '../../db/client.js';
import type { Environment, Scope } from '../../core/context.js';
import { AppError, notFound } from '../../core/errors.js';
import { entryCurrencyMismatch } from './errors.js';
import { newId } from '../../lib/ids.js';
import { formatAmount } from '../../lib/money.js';
import * as accounts from '../accounts/service.js';
import * as transfers from '../transfers/service.js';
import { kindOf, readCash, readPain002, type AccountId, type CashItem, type CashReport, type StatusReport } from './messages.js';
import * as repo from './repo.js';
import { sandboxAnswers, sandboxConnection, simulatedCreditFile, type SimulatedCredit } from './sandbox.js';
import { transportOf, type Transport } from './transport.js';
import { connectionOf } from './connections.js';
import { checksumOf, cutFile, deliverFiles, type CutResult } from './cut.js';
import { reconcileStatement, type ReconciliationResponse } from './reconciliation.js';
import { BankFileError, parseBankXml } from './xml.js';

/**
 * The ISO 20022 file exchange with the platform's sponsor banks (docs/going-live.md): payouts
 * out as pain.001, their status back as pain.002, money in and out of the account as camt.054
 * notifications and camt.053 statements, an exceptions queue for what matches nothing, and each
 * statement's closing balance reconciled with the ledger. Every function here is a plain call
 * (the CLI, the operator API, the worker and an operator console share them).
 */

/** Books an inbound credit to an account (collections' inbound path, handed in by the entry point). */
export type CreditInbound = (
  trx: Trx,
  scope: Scope,
  accountId: string,
  credit: { amount: bigint; reference: string | null; description: string; metadata: Record<string, unknown> },
) => Promise<{ id: string }>;

export interface BankDeps {
  creditInbound: CreditInbound;
  /** Told about each statement that does not agree with the ledger (the operator's event). */
  onBreak?: (reconciliation: ReconciliationResponse) => void;
}

export { addConnection, getConnection, getFile, listConnections, listFiles, setConnectionStatus } from './connections.js';
export { listReconciliations, reconciliationGauges, type ReconciliationResponse } from './reconciliation.js';
export { endToEndIdOf, type CutResult } from './cut.js';

// ---------- files in ----------

export interface ImportResult {
  file_id: string | null;
  kind: string;
  message_id: string;
  duplicate: boolean;
  counts: Record<string, number>;
  reconciliation?: ReconciliationResponse;
}

/** Parses and checks a whole file before anything is booked: a file refused books nothing. */
export function readBankFile(content: Buffer | string) {
  const doc = parseBankXml(content);
  const kind = kindOf(doc);
  if (kind === 'pain.001') throw new BankFileError('A pain.001 is what we send, not a file to import', 'Document');
  return kind === 'pain.002' ? { kind, report: readPain002(doc) } : { kind, report: readCash(doc, kind) };
}

const sameAccount = (a: AccountId, c: repo.ConnectionRow) =>
  (a.iban !== null && a.iban === c.iban) ||
  (a.accountNumber !== null && (a.accountNumber === c.account_number || a.accountNumber === c.iban));

function checkCash(report: CashReport, c: repo.ConnectionRow) {
  for (const r of report.reports) {
    if (!sameAccount(r.account, c))
      throw new BankFileError(`The account ${r.account.iban ?? r.account.accountNumber} is not this connection's`, `${r.where}/Acct`);
    if (r.currency && r.currency !== c.currency)
      throw new BankFileError(`The connection holds ${c.currency}, not ${r.currency}`, `${r.where}/Acct/Ccy`);
    if (r.closing && r.closing.currency !== c.currency)
      throw new BankFileError(`The connection holds ${c.currency}, not ${r.closing.currency}`, `${r.where}/Bal`);
    for (const item of r.items) {
      if (item.currency !== c.currency) throw new BankFileError(`The connection holds ${c.currency}, not ${item.currency}`, item.where);
    }
  }
}

/**
 * Imports one file from the bank in one transaction: checked whole first (refused whole, naming
 * the entry or line), then each status or entry applied once. The same file twice is recognised by
 * its message id; an entry repeated in a later file by the bank's entry reference.
 */
export async function importFile(
  trx: Trx,
  connectionId: string,
  filename: string,
  content: Buffer | string,
  deps: BankDeps,
): Promise<ImportResult> {
  const c = await connectionOf(trx, connectionId);
  const read = readBankFile(content);
  if (read.kind !== 'pain.002') checkCash(read.report, c);
  const text = typeof content === 'string' ? content : content.toString('utf8');
  const seen = await repo.findFileByMessage(trx, c.id, 'in', read.kind, read.report.messageId);
  if (seen) return { file_id: seen.id, kind: read.kind, message_id: read.report.messageId, duplicate: true, counts: {} };
  const file = await repo.insertFile(trx, {
    id: newId(),
    connection_id: c.id,
    direction: 'in',
    kind: read.kind,
    message_id: read.report.messageId,
    filename: filename.slice(0, 255),
    checksum: checksumOf(text),
    size: Buffer.byteLength(text),
    status: 'imported',
    content: null,
  });
  const counts: Record<string, number> = {};
  const count = (k: string) => (counts[k] = (counts[k] ?? 0) + 1);
  let reconciliation: ReconciliationResponse | undefined;
  if (read.kind === 'pain.002') await applyStatusReport(trx, c, read.report, count);
  else {
    for (const r of read.report.reports) for (const item of r.items) count(await applyCashItem(trx, c, file.id, item, deps));
    if (read.kind === 'camt.053') {
      for (const r of read.report.reports) reconciliation = await reconcileStatement(trx, c, file.id, r.id, r.closing!, deps.onBreak);
    }
  }
  await repo.setFileSummary(trx, file.id, counts);
  return {
    file_id: file.id,
    kind: read.kind,
    message_id: read.report.messageId,
    duplicate: false,
    counts,
    ...(reconciliation ? { reconciliation } : {}),
  };
}

/** A payout's transfer id from its EndToEndId (our own, dashless). */
const transferIdOf = (e2e: string) =>
  /^[0-9a-f]{32}$/i.test(e2e)
    ? `${e2e.slice(0, 8)}-${e2e.slice(8, 12)}-${e2e.slice(12, 16)}-${e2e.slice(16, 20)}-${e2e.slice(20)}`.toLowerCase()
    : null;

/** Applies a rail outcome once: a payout already past it (an earlier file said so) is left as it is. */
async function applyOnce(trx: Trx, p: repo.FilePayoutRow, outcome: transfers.RailOutcome, reason: string | null): Promise<boolean> {
  const scope = { tenantId: p.tenant_id, environment: p.environment as Environment };
  try {
    await transfers.applyRailOutcome(trx, scope, p.transfer_id, outcome, reason);
    return true;
  } catch (err) {
    if (err instanceof AppError && err.code === 'invalid_state_transition') return false;
    throw err;
  }
}

async function applyStatusReport(trx: Trx, c: repo.ConnectionRow, report: StatusReport, count: (k: string) => void) {
  const original = await repo.findFileByMessage(trx, c.id, 'out', 'pain.001', report.originalMessageId);
  if (!original) throw new BankFileError(`OrgnlMsgId ${report.originalMessageId} is no pain.001 this connection sent`, 'OrgnlGrpInfAndSts');
  const payouts = await repo.payoutsOfFile(trx, original.id);
  const byE2E = new Map(payouts.map((p) => [p.end_to_end_id, p]));
  for (const tx of report.transactions) {
    if (!byE2E.has(tx.endToEndId))
      throw new BankFileError(`OrgnlEndToEndId ${tx.endToEndId} is not in pain.001 ${report.originalMessageId}`, tx.where);
  }
  if (report.groupStatus === 'RJCT') {
    // The whole file was refused: every payout in it fails, whatever a transaction line says.
    const reason = `Rejected by the bank (file): ${report.groupReason ?? 'RJCT'}`;
    for (const p of payouts) {
      if (await applyOnce(trx, p, 'failed', reason)) await repo.setFilePayoutStatus(trx, p.transfer_id, 'rejected', reason);
      count('rejected');
    }
    return;
  }
  for (const tx of report.transactions) {
    const p = byE2E.get(tx.endToEndId)!;
    if (tx.status === 'ACSC' || tx.status === 'ACCC') {
      if (await applyOnce(trx, p, 'settled', null)) await repo.setFilePayoutStatus(trx, p.transfer_id, 'accepted', null);
      count('completed');
    } else if (tx.status === 'RJCT') {
      const reason = `Rejected by the bank: ${tx.reason ?? 'RJCT'}`;
      if (await applyOnce(trx, p, 'failed', reason)) await repo.setFilePayoutStatus(trx, p.transfer_id, 'rejected', reason);
      count('rejected');
    } else count('pending');
  }
}

/** The account a credit was paid to: the creditor account this API gave it, else a number the reference quotes. */
async function accountFor(trx: Trx, c: repo.ConnectionRow, item: CashItem) {
  const a = item.creditorAccount;
  if (a && !sameAccount(a, c)) {
    const hit = await accounts.findByBankDetails(
      trx,
      c.environment,
      c.currency,
      a.iban ? { iban: a.iban } : { accountNumber: a.accountNumber! },
    );
    if (hit) return hit;
  }
  for (const token of (item.reference ?? '').split(/[\s/:,;]+/).filter((t) => t.length >= 6 && t.length <= 34)) {
    const hit =
      (await accounts.findByBankDetails(trx, c.environment, c.currency, { accountNumber: token })) ??
      (/^[A-Z]{2}\d{2}/.test(token) ? await accounts.findByBankDetails(trx, c.environment, c.currency, { iban: token }) : undefined);
    if (hit) return hit;
  }
  return undefined;
}

async function toException(trx: Trx, c: repo.ConnectionRow, entry: repo.EntryRow, item: CashItem, reason: string) {
  await repo.insertException(trx, {
    id: newId(),
    connection_id: c.id,
    entry_id: entry.id,
    direction: item.direction,
    amount: item.amount,
    currency: item.currency,
    payer_name: item.payerName,
    creditor_account: item.creditorAccount ? (item.creditorAccount.iban ?? item.creditorAccount.accountNumber) : null,
    reference: item.reference,
    reason,
  });
  await repo.setEntryOutcome(trx, entry.id, { outcome: 'exception' });
  return 'exception';
}

async function applyCashItem(trx: Trx, c: repo.ConnectionRow, fileId: string, item: CashItem, deps: BankDeps): Promise<string> {
  // Only booked entries move money; a pending one is booked when the bank reports it booked.
  if (item.status !== 'BOOK') return 'not_booked';
  const entry = await repo.claimEntry(trx, {
    id: newId(),
    connection_id: c.id,
    entry_key: item.key,
    file_id: fileId,
    direction: item.direction,
    amount: item.amount,
    currency: item.currency,
    booking_date: item.bookingDate,
    outcome: 'pending',
    details: JSON.stringify({
      end_to_end_id: item.endToEndId,
      payer_name: item.payerName,
      reference: item.reference,
      return_reason: item.returnReason,
      reversal: item.reversal,
    }),
  });
  if (!entry) return 'duplicate';
  if (item.reversal) return toException(trx, c, entry, item, 'A reversal entry: the operator decides what it corrects');
  const transferId = item.endToEndId ? transferIdOf(item.endToEndId) : null;
  const payout = transferId && item.endToEndId ? await repo.findFilePayoutByE2E(trx, item.endToEndId) : undefined;
  if (payout) {
    const link = { transfer_id: payout.transfer_id, tenant_id: payout.tenant_id, environment: payout.environment };
    if (item.amount !== payout.amount) return toException(trx, c, entry, item, `The amount differs from payout ${payout.transfer_id}'s`);
    if (item.direction === 'credit') {
      // Our payout came back: it is marked returned and the money goes back to its account.
      const reason = `Returned by the bank: ${item.returnReason ?? 'returned'}`;
      if (await applyOnce(trx, payout, 'returned', reason)) await repo.setFilePayoutStatus(trx, payout.transfer_id, 'returned', reason);
      await repo.setEntryOutcome(trx, entry.id, { outcome: 'payout_returned', ...link });
      return 'payout_returned';
    }
    // The bank debited our payout: it is complete, if no status report said so already.
    if (await applyOnce(trx, payout, 'settled', null)) await repo.setFilePayoutStatus(trx, payout.transfer_id, 'accepted', null);
    await repo.setEntryOutcome(trx, entry.id, { outcome: 'payout_confirmed', ...link });
    return 'payout_confirmed';
  }
  if (item.direction === 'debit') return toException(trx, c, entry, item, 'A debit that is none of our payouts');
  const account = await accountFor(trx, c, item);
  if (!account) return toException(trx, c, entry, item, 'No account has these bank details or this reference');
  if (account.status === 'deleted') return toException(trx, c, entry, item, `Account ${account.id} is deleted`);
  const scope = { tenantId: account.tenant_id, environment: account.environment as Environment };
  await deps.creditInbound(trx, scope, account.id, creditOf(item, entry));
  await repo.setEntryOutcome(trx, entry.id, {
    outcome: 'credited',
    tenant_id: account.tenant_id,
    environment: account.environment,
    account_id: account.id,
  });
  return 'credited';
}

function creditOf(item: Pick<CashItem, 'amount' | 'payerName' | 'reference'>, entry: repo.EntryRow) {
  return {
    amount: item.amount,
    reference: item.reference ? item.reference.slice(0, 255) : null,
    description: `Bank transfer${item.payerName ? ` from ${item.payerName}` : ''}${item.reference ? `: ${item.reference}` : ''}`.slice(
      0,
      500,
    ),
    metadata: { bank_entry: entry.entry_key, bank_entry_id: entry.id, payer_name: item.payerName },
  };
}

// ---------- exceptions ----------

export function toExceptionResponse(e: repo.ExceptionRow) {
  return {
    id: e.id,
    connection_id: e.connection_id,
    entry_id: e.entry_id,
    direction: e.direction,
    amount: formatAmount(e.amount, e.currency),
    currency: e.currency,
    payer_name: e.payer_name,
    creditor_account: e.creditor_account,
    reference: e.reference,
    reason: e.reason,
    status: e.status,
    account_id: e.account_id,
    resolved_note: e.resolved_note,
    created_at: e.created_at.toISOString(),
    resolved_at: e.resolved_at?.toISOString() ?? null,
  };
}
export type ExceptionResponse = ReturnType<typeof toExceptionResponse>;

export async function listExceptions(
  db: Queryable,
  filter: { connectionId?: string; status?: 'open' | 'assigned' | 'returned' } = {},
  limit = 100,
) {
  return (await repo.listExceptions(db, filter, limit)).map(toExceptionResponse);
}

async function openException(trx: Trx, id: string) {
  const e = /^[0-9a-f-]{36}$/i.test(id) ? await repo.findException(trx, id, 'update') : undefined;
  if (!e) throw notFound('Bank exception');
  if (e.status !== 'open') throw new AppError('invalid_state_transition', `The exception is already ${e.status}`);
  return e;
}

/** The operator books an unmatched credit to the account it belongs to (found by other means). */
export async function assignException(trx: Trx, id: string, accountId: string, note: string | null, deps: BankDeps) {
  const e = await openException(trx, id);
  if (e.direction !== 'credit')
    throw new AppError('invalid_state_transition', 'Only a credit can be assigned to an account; return a debit to the bank');
  const c = await connectionOf(trx, e.connection_id);
  const account = /^[0-9a-f-]{36}$/i.test(accountId) ? await accounts.findAccountById(trx, accountId) : undefined;
  if (!account || account.environment !== c.environment) throw notFound('Account');
  if (account.currency !== e.currency) throw entryCurrencyMismatch(account.currency, e.currency);
  const entry = await repo.findEntry(trx, e.entry_id);
  const scope = { tenantId: account.tenant_id, environment: account.environment as Environment };
  await deps.creditInbound(trx, scope, account.id, creditOf({ amount: e.amount, payerName: e.payer_name, reference: e.reference }, entry));
  await repo.setEntryOutcome(trx, entry.id, {
    outcome: 'credited',
    tenant_id: account.tenant_id,
    environment: account.environment,
    account_id: account.id,
  });
  const done = await repo.resolveException(trx, e.id, {
    status: 'assigned',
    tenant_id: account.tenant_id,
    account_id: account.id,
    resolved_note: note,
  });
  return toExceptionResponse(done!);
}

/** The operator sends the money back to the payer at the bank: nothing is booked to any account. */
export async function returnException(trx: Trx, id: string, note: string | null) {
  const e = await openException(trx, id);
  const done = await repo.resolveException(trx, e.id, { status: 'returned', resolved_note: note });
  await repo.setEntryOutcome(trx, e.entry_id, { outcome: 'returned_to_sender' });
  return toExceptionResponse(done!);
}

// ---------- the exchange as one pass ----------

export interface ExchangeResult {
  cut: { file: { id: string; filename: string; message_id: string; checksum: string } | undefined; refused: CutResult['refused'] };
  delivered: string[];
  imported: (ImportResult & { filename: string })[];
  rejected: { filename: string; error: string }[];
}

/**
 * One pass of a connection: cut a file of waiting payouts, deliver what is undelivered, import
 * what the bank left in the inbox (each file in its own transaction; a refused file is moved to
 * `rejected/` with its error recorded, never half-booked). The worker runs it on a schedule; the
 * CLI and the operator API run it on demand.
 */
export async function exchange(
  unit: UnitOfWork,
  db: Queryable,
  connectionId: string,
  deps: BankDeps,
  { transport }: { transport?: Transport } = {},
): Promise<ExchangeResult> {
  const c = await connectionOf(db, connectionId);
  const t = transport ?? transportOf(c);
  try {
    const made = c.status === 'active' ? await unit((trx) => cutFile(trx, c.id)) : { file: undefined, refused: [] };
    const f = made.file;
    const cut = { file: f && { id: f.id, filename: f.filename, message_id: f.message_id, checksum: f.checksum }, refused: made.refused };
    const files = await deliverFiles(unit, db, c.id, t);
    if (c.environment === 'sandbox') {
      // The sandbox bank answers at once, through the same importer as a real bank's files.
      for (const file of files) {
        const payouts = await repo.payoutsOfFile(db, file.id);
        for (const answer of sandboxAnswers(c, file, payouts))
          await unit((trx) => importFile(trx, c.id, answer.name, answer.content, deps));
      }
    }
    const delivered = files.map((f) => f.filename);
    const imported: ExchangeResult['imported'] = [];
    const rejected: ExchangeResult['rejected'] = [];
    for (const name of await t.inbox()) {
      try {
        const content = await t.read(name);
        imported.push({ filename: name, ...(await unit((trx) => importFile(trx, c.id, name, content, deps))) });
        await t.archive(name, 'processed');
      } catch (err) {
        // The bank unreachable stops the pass; a file refused is set aside and the pass goes on.
        if (!(err instanceof AppError) || err.code === 'service_unavailable') throw err;
        rejected.push({ filename: name, error: err.message });
        await t.archive(name, 'rejected');
      }
    }
    return { cut, delivered, imported, rejected };
  } finally {
    if (!transport) await t.close();
  }
}

/** Active connections (the worker passes over each). */
export async function activeConnectionIds(db: Queryable) {
  return (await repo.listConnections(db)).filter((c) => c.status === 'active').map((c) => c.id);
}

// ---------- sandbox ----------

/**
 * Sandbox: money arrives by bank transfer into one of the business's accounts, notified as the
 * bank would (a camt.054 credit naming the account's bank details) and imported by the live
 * importer through the sandbox bank connection of its currency.
 */
export async function simulateInboundCredit(
  trx: Trx,
  ctx: Scope,
  accountId: string,
  body: SimulatedCredit,
  dataDir: string,
  deps: BankDeps,
) {
  if (ctx.environment !== 'sandbox') throw notFound('Route');
  const account = await accounts.findAccountById(trx, accountId);
  if (!account || account.tenant_id !== ctx.tenantId || account.environment !== ctx.environment) throw notFound('Account');
  const c = await sandboxConnection(trx, account.currency, dataDir);
  const file = simulatedCreditFile(c, account, body);
  const result = await importFile(trx, c.id, file.name, file.content, deps);
  return {
    entry_reference: file.ref,
    outcome: Object.keys(result.counts)[0] ?? 'duplicate',
    account_id: account.id,
    amount: formatAmount(file.amount, account.currency),
    currency: account.currency,
    payer_name: body.payer_name ?? null,
    reference: body.reference ?? null,
  };
}
