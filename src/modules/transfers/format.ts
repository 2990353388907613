import { formatAmount } from '../../lib/money.js';
import type { TransferRow } from './repo.js';
import type { TransferResponse } from './schema.js';

type ApprovalStatus = NonNullable<TransferResponse['approval_status']>;

export function toTransferResponse(row: TransferRow): TransferResponse {
  // Only payouts carry an approval (`payout` in their metadata is always ours, never the client's).
  const approval =
    row.destination_type === 'external_account' ? (row.metadata as { payout?: { approval?: ApprovalStatus } }).payout?.approval : undefined;
  const money = (v: bigint | null, c: string | null) => (v === null || c === null ? null : formatAmount(v, c));
  return {
    id: row.id,
    // A transfer's reference is its id (migration 1270).
    reference: row.id,
    client_reference: row.client_reference,
    transfer_status: row.status,
    source: { source_type: row.source_type, id: row.source_id },
    destination: { destination_type: row.destination_type, id: row.destination_id, rail: row.rail },
    amount: formatAmount(row.amount, row.currency),
    currency: row.currency,
    fee: formatAmount(row.fee, row.currency),
    local_amount: money(row.local_amount, row.local_currency),
    local_currency: row.local_currency,
    rate: row.rate,
    failure_reason: row.failure_reason,
    ...(row.transaction_id ? { transaction_id: row.transaction_id } : {}),
    customer_id: row.customer_id,
    description: row.description,
    ...(approval ? { approval_status: approval } : {}),
    date_created: row.created_at.toISOString(),
    date_updated: row.updated_at.toISOString(),
  };
}
