import type { Queryable, Trx } from '../../db/client.js';
import { newId } from '../../lib/ids.js';
import { formatAmount } from '../../lib/money.js';
import * as repo from './repo.js';

/** Each camt.053 statement's closing balance reconciled with the ledger. */

export function toReconciliationResponse(r: repo.ReconciliationRow) {
  return {
    id: r.id,
    connection_id: r.connection_id,
    file_id: r.file_id,
    statement_id: r.statement_id,
    statement_date: r.statement_date,
    currency: r.currency,
    bank_balance: formatAmount(r.bank_balance, r.currency),
    ledger_balance: formatAmount(r.ledger_balance, r.currency),
    difference: formatAmount(r.difference, r.currency),
    status: r.status,
    explanation: r.explanation,
    created_at: r.created_at.toISOString(),
  };
}
export type ReconciliationResponse = ReturnType<typeof toReconciliationResponse>;

/**
 * A statement's closing balance against the ledger: minus the settlement accounts of the
 * connection's environment and currency at the end of the statement's date. A difference comes
 * with the open exceptions (money the bank moved that no account has been given) and what they
 * leave unexplained.
 */
export async function reconcileStatement(
  trx: Trx,
  c: repo.ConnectionRow,
  fileId: string,
  statementId: string,
  closing: { amount: bigint; currency: string; date: string },
  onBreak: ((reconciliation: ReconciliationResponse) => void) | undefined,
) {
  const ledgerBalance = await repo.settlementAt(trx, c, closing.date);
  const difference = closing.amount - ledgerBalance;
  const open = await repo.openExceptions(trx, c.id);
  const explained = open.reduce((s, e) => s + (e.direction === 'credit' ? e.amount : -e.amount), 0n);
  const explanation =
    difference === 0n
      ? []
      : [
          ...open.map((e) => ({
            exception_id: e.id,
            direction: e.direction,
            amount: formatAmount(e.amount, e.currency),
            reason: e.reason,
            reference: e.reference,
          })),
          { unexplained: formatAmount(difference - explained, c.currency) },
        ];
  const row = await repo.insertReconciliation(trx, {
    id: newId(),
    connection_id: c.id,
    file_id: fileId,
    statement_id: statementId,
    statement_date: closing.date,
    currency: c.currency,
    bank_balance: closing.amount,
    ledger_balance: ledgerBalance,
    difference,
    status: difference === 0n ? 'agreed' : 'break',
    explanation: JSON.stringify(explanation),
  });
  const response = toReconciliationResponse(row);
  if (row.status === 'break') onBreak?.(response);
  return response;
}

export async function listReconciliations(db: Queryable, connectionId?: string, limit = 100) {
  return (await repo.listReconciliations(db, connectionId, limit)).map(toReconciliationResponse);
}

/** The newest difference per connection, in minor units (for /metrics). */
export async function reconciliationGauges(db: Queryable) {
  return repo.latestReconciliations(db);
}
