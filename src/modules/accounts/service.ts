import type { Config } from '../../config.js';
import { Batcher } from '../../db/batcher.js';
import type { Queryable, Trx } from '../../db/client.js';
import { groupByScope, scopeKey, type RequestContext, type Scope } from '../../core/context.js';
import { AppError, notFound, validationError } from '../../core/errors.js';
import { withExtra, type Page, type PageExtra } from '../../db/pagination.js';
import type { TimestampText } from '../../db/timestamp-text.js';
import { generateBankDetails } from '../../lib/bank-details.js';
import { newId } from '../../lib/ids.js';
import { keyedOnce } from '../../lib/memo.js';
import { formatAmount, isKnownCurrency } from '../../lib/money.js';
import * as ledger from '../../ledger/index.js';
import { requireCustomer } from '../customers/service.js';
import { requireAccountCurrency } from '../features/service.js';
import { getTenant } from '../tenants/service.js';
import { recordEvent } from '../webhooks/service.js';
import * as repo from './repo.js';
import type { AccountResponse, CreateAccountBody, ListAccountsQuery } from './schema.js';

export type AccountRow = repo.AccountRow;
export type MovementAccountRow = repo.MovementAccountRow;

const CAPABILITIES: Record<AccountRow['status'], string[]> = {
  active: ['transfer', 'receive'],
  frozen: ['receive'],
  deleted: [],
};

export function toAccountResponse(row: AccountRow, balance: Pick<ledger.Balance, 'posted' | 'available'> | undefined): AccountResponse {
  return accountAnswer(
    row,
    row.tenant_id,
    row.created_at.toISOString(),
    row.updated_at.toISOString(),
    balance?.posted ?? 0n,
    balance?.available ?? 0n,
  );
}

/** The fields of a row an answer shows besides its business, dates and balances. */
type AnswerColumns = Pick<
  AccountRow,
  'id' | 'label' | 'type' | 'customer_id' | 'status' | 'currency' | 'category' | 'account_number' | 'bank_details' | 'metadata'
>;

/**
 * An account's answer. Absent, never null, where the reference types the field as a string
 * (docs/api-rules.md#absent-values): customer_id and the routing number are only set when they
 * have a value, each in its place, so the object has the same keys in the same order as one
 * made whole and then stripped of those fields (omitNulls), without the copy and the deletes.
 */
function accountAnswer(
  row: AnswerColumns,
  tenantId: string,
  dateCreated: string,
  dateUpdated: string,
  posted: bigint,
  available: bigint,
): AccountResponse {
  const bank = row.bank_details;
  const answer = { id: row.id, label: row.label, date_created: dateCreated, date_updated: dateUpdated, type: row.type } as AccountResponse;
  if (row.customer_id !== null && row.customer_id !== undefined) answer.customer_id = row.customer_id;
  answer.capabilities = CAPABILITIES[row.status];
  answer.currency = row.currency;
  answer.tenant_id = tenantId;
  answer.status = row.status;
  answer.category = row.category;
  answer.balance = formatAmount(posted, row.currency);
  answer.available_balance = formatAmount(available, row.currency);
  answer.is_tokenized = false;
  answer.account_number = row.account_number;
  answer.bank_details = bank;
  answer.virtual_account_bank_name = bank.bank_name;
  answer.virtual_account_bank_account_number = bank.account_number;
  const routing = bank.routing_number;
  if (routing !== null && routing !== undefined) answer.virtual_account_bank_routing_number = routing;
  answer.virtual_account_bank_beneficiary_name = bank.account_name;
  answer.metadata = row.metadata;
  return answer;
}

/** A row read with its balance columns (repo.findAccountsWithBalance): available = posted - pending debits, as the ledger defines it. */
function fromJoinedRow({ posted, pending_debits, ...row }: repo.AccountWithBalance): AccountResponse {
  return toAccountResponse(row, posted === null ? undefined : { posted, available: posted - (pending_debits ?? 0n) });
}

/** An account read's row (repo.readAccounts) as its answer: the same as fromJoinedRow of the whole row. */
function fromReadRow(row: repo.AccountReadRow, tenantId: string, isoText: TimestampText): AccountResponse {
  const posted = row.posted ?? 0n;
  const available = row.posted === null ? 0n : row.posted - (row.pending_debits ?? 0n);
  return accountAnswer(row, tenantId, isoText(row.created_at), isoText(row.updated_at), posted, available);
}

function assertSupportedCurrency(config: Config, currency: string) {
  if (!config.SUPPORTED_CURRENCIES.includes(currency) || !isKnownCurrency(currency)) {
    throw validationError([{ field: 'currency', code: 'unsupported', message: `Use one of ${config.SUPPORTED_CURRENCIES.join(', ')}` }]);
  }
}

/** Creates the account row and its ledger account (same id) with fresh, unique bank details. */
async function insertWithBankDetails(
  trx: Trx,
  ctx: Scope,
  input: {
    /** An id reserved for it (feeAccountOrReservation); a new one otherwise. */
    id?: string;
    currency: string;
    type: 'regular' | 'savings';
    label: string;
    customerId: string | null;
    accountName: string;
    metadata: Record<string, unknown>;
  },
): Promise<AccountRow> {
  const id = await ledger.openAccount(trx, ctx, { currency: input.currency, ...(input.id ? { id: input.id } : {}) });
  for (let attempt = 0; attempt < 8; attempt++) {
    const bank = generateBankDetails(input.currency, input.accountName);
    const inserted = await repo.insertAccount(trx, {
      id,
      tenant_id: ctx.tenantId,
      environment: ctx.environment,
      customer_id: input.customerId,
      currency: input.currency,
      type: input.type,
      label: input.label,
      account_number: bank.account_number,
      bank_details: JSON.stringify(bank),
      metadata: JSON.stringify(input.metadata),
    });
    if (inserted) {
      const row = await repo.findAccount(trx, ctx, id);
      if (row) return row;
    }
  }
  throw new Error('could not draw a unique account number');
}

export async function createAccount(
  trx: Trx,
  ctx: Scope & Pick<RequestContext, 'settings'>,
  body: CreateAccountBody,
  config: Config,
  options: { settlement?: boolean } = {},
): Promise<AccountResponse> {
  assertSupportedCurrency(config, body.currency);
  let accountName: string;
  if (body.customer_id) {
    const customer = await requireCustomer(trx, ctx, body.customer_id);
    // A customer account outside the business's home currencies needs the `<ccy>_account` feature,
    // except a settlement account: money only passes through it on its way to an external account.
    if (!options.settlement) await requireAccountCurrency(trx, ctx, body.customer_id, body.currency, config);
    accountName =
      customer.type === 'business'
        ? (customer.business_name ?? customer.email)
        : [customer.first_name, customer.middle_name, customer.last_name].filter(Boolean).join(' ');
  } else {
    accountName = (await getTenant(trx, ctx.tenantId))?.name ?? 'Business account';
  }
  const row = await insertWithBankDetails(trx, ctx, {
    currency: body.currency,
    type: body.type,
    label: body.label,
    customerId: body.customer_id ?? null,
    accountName,
    metadata: body.metadata ?? {},
  });
  const account = toAccountResponse(row, undefined);
  await recordEvent(trx, ctx, 'account.created', account);
  return account;
}

export async function getAccount(db: Queryable, ctx: Scope, id: string): Promise<AccountResponse> {
  const [row] = await repo.findAccountsWithBalance(db, ctx, [id]);
  if (!row) throw notFound('Account');
  return fromJoinedRow(row);
}

interface AccountRead {
  ctx: Scope;
  id: string;
  resolve: (account: AccountResponse) => void;
  reject: (err: unknown) => void;
}

/**
 * `GET /v1/accounts/{id}` under load: concurrent reads are gathered (db/batcher.ts) into one
 * statement per business and environment, so a burst of N reads is one round trip, not N (each
 * round trip's send is a system call that cost about as much as the rest of the request). Each
 * read is answered as if alone: its account or 404. The statement starts after the request
 * arrived, so a read still sees every write acknowledged before it.
 */
export function accountReader(
  db: Queryable,
  options: { lanes: number; maxBatch: number; timestampText: TimestampText },
): (ctx: Scope, id: string) => Promise<AccountResponse> {
  const { timestampText, ...batching } = options;
  const readGroup = async (ctx: Scope, reads: AccountRead[]) => {
    try {
      const ids = reads.length === 1 ? [reads[0]!.id] : [...new Set(reads.map((r) => r.id))];
      const rows = await repo.readAccounts(db, ctx, ids);
      const found = new Map<string, repo.AccountReadRow>();
      for (const row of rows) found.set(row.id, row);
      for (const read of reads) {
        const row = found.get(read.id);
        if (row) read.resolve(fromReadRow(row, ctx.tenantId, timestampText));
        else read.reject(notFound('Account'));
      }
    } catch (err) {
      for (const read of reads) read.reject(err);
    }
  };
  const batcher = new Batcher<AccountRead>(
    async (reads) => {
      // Mostly one business per batch: its reads go as they are, without grouping.
      const { tenantId, environment } = reads[0]!.ctx;
      if (reads.every((read) => read.ctx.tenantId === tenantId && read.ctx.environment === environment))
        return readGroup(reads[0]!.ctx, reads);
      for (const group of groupByScope(reads.map((read) => ({ ctx: read.ctx, values: [read] })))) await readGroup(group.ctx, group.values);
    },
    { ...batching, name: 'account_reads', fail: (reads, err) => reads.forEach((read) => read.reject(err)) },
  );
  return (ctx, id) => new Promise((resolve, reject) => batcher.submit({ ctx, id, resolve, reject }));
}

/** A page of accounts; with `extra`, each item also carries the columns it joins (`extra`). */
export async function listAccounts<E = never>(
  db: Queryable,
  ctx: Scope,
  query: ListAccountsQuery,
  extra?: PageExtra<E>,
): Promise<Page<AccountResponse & { extra?: E }>> {
  const page = await repo.listAccounts(db, ctx, query, extra);
  return { ...page, items: page.items.map((r) => withExtra(fromJoinedRow(r), r, extra)) };
}

/**
 * active <-> frozen; deleted is final and only at a zero balance with no holds. The balance row
 * is locked so no posting can land between the zero check and the commit.
 */
export async function updateStatus(trx: Trx, ctx: Scope, id: string, status: AccountRow['status']): Promise<AccountResponse> {
  const current = await repo.findAccount(trx, ctx, id, 'update');
  if (!current) throw notFound('Account');
  const balance = (await ledger.lockBalances(trx, ctx, [id])).get(id);
  if (current.status === status) return toAccountResponse(current, balance);
  if (current.status === 'deleted') throw new AppError('invalid_state_transition', 'A deleted account cannot change status');
  if (status === 'deleted' && balance && (balance.posted !== 0n || balance.pendingDebits !== 0n || balance.pendingCredits !== 0n)) {
    throw new AppError('invalid_state_transition', 'Only an account with a zero balance and no pending holds can be deleted');
  }
  const updated = await repo.updateStatus(trx, ctx, id, status);
  const account = toAccountResponse(updated, balance);
  await recordEvent(trx, ctx, 'account.status.updated', account);
  return account;
}

export {
  knownAccount,
  lockForMovement,
  lockForMovements,
  lockForMovementsPlan,
  lockForMovementStatement,
  readForMovementStatement,
  type KnownAccount,
  type LockedAccounts,
} from './movement-locks.js';

/** The id of the oldest active account of a customer (null: of the business) in `currency`, if any. */
export async function oldestActiveAccount(db: Queryable, ctx: Scope, customerId: string | null, currency: string) {
  return (await repo.findOldestActiveAccount(db, ctx, customerId, currency))?.id;
}

/** 409 unless money may leave the account. */
export function assertCanDebit(row: MovementAccountRow, field = 'source.id'): void {
  if (row.status === 'frozen')
    throw new AppError('account_frozen', undefined, [{ field, code: 'account_frozen', message: 'Frozen accounts cannot send money' }]);
  if (row.status === 'deleted')
    throw new AppError('account_inactive', undefined, [{ field, code: 'account_inactive', message: 'Deleted accounts cannot send money' }]);
}

/** 409 unless money may arrive (a frozen account still receives; a deleted one does not). */
export function assertCanCredit(row: MovementAccountRow, field = 'destination.id'): void {
  if (row.status === 'deleted')
    throw new AppError('account_inactive', undefined, [
      { field, code: 'account_inactive', message: 'Deleted accounts cannot receive money' },
    ]);
}

/** The business's account in `currency` that fees go to, when it exists (businessFeeAccount creates it). */
export async function findBusinessFeeAccount(db: Queryable, ctx: Scope, currency: string): Promise<AccountRow | undefined> {
  return repo.findBusinessAccount(db, ctx, currency);
}

/**
 * The business's own account in `currency`, where fees are credited (docs/api-rules.md#money): the
 * oldest non-deleted one; without one, an id reserved for a new "Fees" account, which
 * createFeeAccount makes once a fee is really charged (a refused movement leaves nothing behind).
 * An advisory lock per business and currency, held until the commit, makes concurrent first fees
 * create exactly one.
 */
async function feeAccountOrReservation(trx: Trx, ctx: Scope, currency: string): Promise<{ row: AccountRow } | { reserved: string }> {
  const existing = await findBusinessFeeAccount(trx, ctx, currency);
  if (existing) return { row: existing };
  await repo.lockBusinessCurrency(trx, ctx, currency);
  const again = await findBusinessFeeAccount(trx, ctx, currency);
  return again ? { row: again } : { reserved: newId() };
}

/** Creates the business's "Fees" account in `currency` under the id feeAccountOrReservation reserved. */
async function createFeeAccount(trx: Trx, ctx: Scope, currency: string, id: string): Promise<AccountRow> {
  const accountName = (await getTenant(trx, ctx.tenantId))?.name ?? 'Business account';
  const row = await insertWithBankDetails(trx, ctx, {
    id,
    currency,
    type: 'regular',
    label: 'Fees',
    customerId: null,
    accountName,
    metadata: { purpose: 'fees' },
  });
  await recordEvent(trx, ctx, 'account.created', toAccountResponse(row, undefined));
  return row;
}

/** The business's fee account in `currency`, created now if it has none (callers that charge the fee for sure). */
export async function businessFeeAccount(trx: Trx, ctx: Scope, currency: string): Promise<AccountRow> {
  const found = await feeAccountOrReservation(trx, ctx, currency);
  return 'row' in found ? found.row : createFeeAccount(trx, ctx, currency, found.reserved);
}

/** A Fees account a batch reserved: created by createUsed only if an accepted movement pays into it. */
interface ReservedFeeAccount {
  ctx: Scope;
  currency: string;
  id: string;
}

/**
 * The fee accounts of one batch of money movements, one per business and currency, looked up once
 * (`of`). A business without one gets an id reserved for it, posted to in memory like an empty
 * account: `openBook` adds those to the batch's ledger book unwritten (PostingBatch.addReserved)
 * and locks the rest; after the decisions, `createUsed` creates those an accepted movement paid a
 * fee into, before the batch's writes. A refused movement so leaves no empty account and no
 * `account.created` event behind.
 */
export function batchFeeAccounts(trx: Trx) {
  const found = keyedOnce<{ id: string }>();
  const reserved: ReservedFeeAccount[] = [];
  return {
    of: (ctx: Scope, currency: string) =>
      found(`${scopeKey(ctx)}:${currency}`, async () => {
        const account = await feeAccountOrReservation(trx, ctx, currency);
        if ('row' in account) return account.row;
        reserved.push({ ctx, currency, id: account.reserved });
        return { id: account.reserved };
      }),
    /** The batch's book over `accountIds`, locked but for the reserved ones and `alsoUnwritten` (the caller adds those). */
    async openBook(accountIds: string[], alsoUnwritten: string[] = [], ahead?: ledger.LockedAhead): Promise<ledger.PostingBatch> {
      const unwritten = new Set([...alsoUnwritten, ...reserved.map((r) => r.id)]);
      const book = await ledger.PostingBatch.open(
        trx,
        accountIds.filter((id) => !unwritten.has(id)),
        ahead,
      );
      for (const r of reserved) book.addReserved(r.ctx, r.id, r.currency);
      return book;
    },
    async createUsed(book: ledger.PostingBatch): Promise<void> {
      for (const r of reserved) if (book.used(r.id)) await createFeeAccount(trx, r.ctx, r.currency, r.id);
    },
  };
}

/** The account inbound bank details name (bank-files: a credit entry's creditor account or reference). */
export function findByBankDetails(
  db: Queryable,
  environment: string,
  currency: string,
  details: { iban?: string; accountNumber?: string },
) {
  return repo.findByBankDetails(db, environment, currency, details);
}

/** An account by id, whatever its business (the operator's exceptions queue). */
export function findAccountById(db: Queryable, id: string) {
  return repo.findAccountById(db, id);
}
