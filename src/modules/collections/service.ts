import type { Config } from '../../config.js';
import type { Queryable } from '../../db/client.js';
import type { Scope } from '../../core/context.js';
import type { BusinessSettings } from '../../core/settings.js';
import { AppError, notFound, validationError } from '../../core/errors.js';
import type { Page } from '../../db/pagination.js';
import { omitNulls } from '../../lib/absent.js';
import { constantTimeEqual, randomBase62, type Sealer } from '../../lib/crypto.js';
import { newId } from '../../lib/ids.js';
import { formatAmount, parseAmount } from '../../lib/money.js';
import { checkMobileMoneyNumber } from '../../lib/payee-validation.js';
import * as accounts from '../accounts/service.js';
import { requireCustomer } from '../customers/service.js';
import { feeOf } from '../pricing/service.js';
import { recordEvent } from '../webhooks/service.js';
import * as repo from './repo.js';
import type { CollectionResponse, CreateCollectionBody, ListCollectionsQuery } from './schema.js';

/** What collection services need beyond the database: the data key and the public base URL. */
export interface CollectionDeps {
  config: Pick<Config, 'COLLECTION_EXPIRY_MINUTES' | 'COLLECTION_FEE_PERCENT'>;
  sealer: Sealer;
  /** Origin of the hosted checkout page, e.g. https://api.example.com */
  baseUrl: string;
}

const sealContext = (id: string) => `collection-checkout:${id}`;

export function paymentLink(d: Pick<CollectionDeps, 'sealer' | 'baseUrl'>, row: repo.CollectionRow): string | null {
  if (!row.checkout_token) return null;
  return `${d.baseUrl}/checkout/${row.id}?session=${d.sealer.open(row.checkout_token, sealContext(row.id))}`;
}

/** The checkout page's session token, compared in constant time. */
export function sessionMatches(sealer: Sealer, row: repo.CollectionRow, session: string): boolean {
  if (!row.checkout_token) return false;
  return constantTimeEqual(Buffer.from(sealer.open(row.checkout_token, sealContext(row.id))), Buffer.from(session));
}

export function toResponse(d: Pick<CollectionDeps, 'sealer' | 'baseUrl'>, row: repo.CollectionRow): CollectionResponse {
  const link = row.status === 'pending' ? paymentLink(d, row) : null;
  const bankTransfer = row.bank_instructions;
  // Absent, never null, where the reference types the field as a string (docs/api-rules.md#absent-values).
  return omitNulls(
    {
      id: row.id,
      transaction_id: row.id,
      kind: row.kind,
      status: row.status,
      transaction_status: row.status,
      detailed_status: row.detailed_status,
      method: row.method,
      amount: formatAmount(row.amount, row.currency),
      currency: row.currency,
      country: row.country,
      fee: formatAmount(row.fee, row.currency),
      net_amount: formatAmount(row.amount - row.fee, row.currency),
      customer_id: row.customer_id,
      client_customer_id: row.client_customer_id,
      client_reference: row.client_reference,
      destination: { destination_type: 'internal_account', id: row.destination_account_id },
      payment_link: link,
      raw_payment_link: link,
      instruction: row.instruction,
      bank_transfer:
        row.method === 'bank_transfer' && bankTransfer && row.payment_reference
          ? { ...bankTransfer, reference: row.payment_reference, amount: formatAmount(row.amount, row.currency), currency: row.currency }
          : null,
      failure_code: row.failure_code,
      failure_reason: row.failure_reason,
      metadata: row.metadata,
      account_transaction_id: row.transaction_id,
      expires_at: row.expires_at.toISOString(),
      date_created: row.created_at.toISOString(),
      date_updated: row.updated_at.toISOString(),
    },
    ['client_reference', 'payment_link', 'raw_payment_link'],
  );
}

/** The first requested method this service collects by (Apple/Google Pay ride on the card page). */
function pickMethod(methods: string[]): repo.Method {
  for (const m of methods) {
    if (m === 'card' || m === 'apple_pay' || m === 'google_pay') return 'card';
    if (m === 'bank_transfer' || m === 'mobile_money') return m;
  }
  throw validationError([
    { field: 'source.methods', code: 'unsupported', message: 'Use card, bank_transfer or mobile_money (pix is not available)' },
  ]);
}

/** The destination account: an active account of this business in the collection's currency. */
export async function destinationAccount(
  trx: Queryable,
  ctx: Scope,
  destination: { destination_type: string; id?: string | undefined },
  currency: string,
) {
  if (destination.destination_type !== 'internal_account') {
    throw validationError([
      { field: 'destination.destination_type', code: 'unsupported', message: 'This service is fiat only: use internal_account' },
    ]);
  }
  if (!destination.id) throw validationError([{ field: 'destination.id', code: 'required', message: 'Required' }]);
  const account = (await accounts.lockForMovement(trx, ctx, [destination.id])).get(destination.id);
  if (!account) throw notFound('Destination account', [{ field: 'destination.id', code: 'not_found', message: 'No such account' }]);
  accounts.assertCanCredit(account);
  if (account.currency !== currency) {
    const message = `The destination account holds ${account.currency}`;
    throw new AppError('currency_mismatch', message, [{ field: 'currency', code: 'currency_mismatch', message }]);
  }
  return account;
}

function instructionFor(
  method: repo.Method,
  amount: string,
  currency: string,
  reference: string,
  bank: { account_number: string; account_name: string | null; bank_name: string | null },
  phone: string | null,
  expires: Date,
) {
  if (method === 'bank_transfer') {
    return (
      `Transfer exactly ${amount} ${currency} to account ${bank.account_number} (${bank.bank_name ?? 'bank'}, ${bank.account_name ?? 'beneficiary'}) ` +
      `quoting the reference ${reference}. Payments without this reference cannot be matched. Pay before ${expires.toISOString()}.`
    );
  }
  if (method === 'mobile_money') {
    return (
      `A payment prompt for ${amount} ${currency} (reference ${reference}) is sent to ${phone ?? "the payer's wallet"}. ` +
      `Approve it with the wallet PIN before ${expires.toISOString()}.`
    );
  }
  return null;
}

export interface NewCollection {
  kind: 'collection' | 'payment_intent';
  method: repo.Method;
  methods: string[];
  amount: bigint;
  currency: string;
  country: string;
  customerId: string;
  clientCustomerId?: string | undefined;
  clientReference?: string | undefined;
  accountId: string;
  metadata?: Record<string, unknown> | undefined;
  payerPhone?: string | null;
  bank?: { account_number: string; account_name: string | null; bank_name: string | null };
}

/** Writes a pending collection with its event; card collections get a checkout session. */
export async function insertPending(trx: Queryable, ctx: Scope, d: CollectionDeps, c: NewCollection): Promise<repo.CollectionRow> {
  const id = newId();
  const now = new Date();
  const expires = new Date(now.getTime() + d.config.COLLECTION_EXPIRY_MINUTES * 60_000);
  const reference = c.method === 'card' ? null : `COL${randomBase62(10).toUpperCase()}`;
  const amountText = formatAmount(c.amount, c.currency);
  const row: repo.CollectionRow = {
    id,
    tenant_id: ctx.tenantId,
    environment: ctx.environment,
    kind: c.kind,
    customer_id: c.customerId,
    client_customer_id: c.clientCustomerId ?? null,
    client_reference: c.clientReference ?? null,
    method: c.method,
    methods: c.methods,
    amount: c.amount,
    currency: c.currency,
    country: c.country,
    destination_account_id: c.accountId,
    status: 'pending',
    detailed_status: c.method === 'card' ? 'created' : 'initialized',
    fee: 0n,
    failure_code: null,
    failure_reason: null,
    payment_reference: reference,
    instruction:
      reference && c.bank ? instructionFor(c.method, amountText, c.currency, reference, c.bank, c.payerPhone ?? null, expires) : null,
    payer_phone: c.payerPhone ?? null,
    checkout_token: c.method === 'card' ? d.sealer.seal(randomBase62(43), sealContext(id)) : null,
    saved_card_id: null,
    ledger_transaction_id: null,
    transaction_id: null,
    bank_instructions: c.bank && c.method === 'bank_transfer' ? c.bank : null,
    metadata: c.metadata ?? {},
    expires_at: expires,
    completed_at: null,
    created_at: now,
    updated_at: now,
  };
  const { created_at: _created, updated_at: _updated, ...insertable } = row;
  await repo.insertCollection(trx, {
    ...insertable,
    methods: JSON.stringify(row.methods),
    metadata: JSON.stringify(row.metadata),
    bank_instructions: row.bank_instructions ? JSON.stringify(row.bank_instructions) : null,
  });
  // The payment link is a bearer capability for the payer: it goes back in the API response only,
  // never into the outbox (events are stored and delivered in clear).
  const { payment_link: _link, raw_payment_link: _raw, ...eventData } = toResponse(d, row);
  await recordEvent(trx, ctx, 'collection.status.pending', eventData);
  return row;
}

/** POST /v1/collections */
export async function createCollection(
  trx: Queryable,
  ctx: Scope,
  d: CollectionDeps,
  body: CreateCollectionBody,
): Promise<CollectionResponse> {
  await requireCustomer(trx, ctx, body.customer_id);
  const amount = parseAmount(body.amount, body.currency);
  const method = pickMethod(body.source.methods);
  let phone: string | null = null;
  if (method === 'mobile_money') {
    const check = checkMobileMoneyNumber(body.source.phone_number ?? '', body.country, []);
    if (!check.ok) {
      throw validationError([
        {
          field: 'source.phone_number',
          code: body.source.phone_number ? 'invalid' : 'required',
          message: `The payer's mobile wallet number in ${body.country}, E.164 (${check.reason})`,
        },
      ]);
    }
    phone = check.e164;
  }
  const account = await destinationAccount(trx, ctx, body.destination, body.currency);
  const bank = {
    account_number: account.account_number,
    account_name: account.bank_details.account_name ?? null,
    bank_name: account.bank_details.bank_name ?? null,
  };
  const row = await insertPending(trx, ctx, d, {
    kind: 'collection',
    method,
    methods: body.source.methods,
    amount,
    currency: body.currency,
    country: body.country,
    customerId: body.customer_id,
    clientCustomerId: body.client_customer_id,
    clientReference: body.client_reference,
    accountId: account.id,
    metadata: body.metadata,
    payerPhone: phone,
    bank,
  });
  return toResponse(d, row);
}

export async function getCollection(
  db: Queryable,
  ctx: Scope,
  d: Pick<CollectionDeps, 'sealer' | 'baseUrl'>,
  id: string,
): Promise<CollectionResponse> {
  const row = await repo.findCollection(db, ctx, id);
  if (!row) throw notFound('Collection');
  return toResponse(d, row);
}

export async function listCollections(
  db: Queryable,
  ctx: Scope,
  d: Pick<CollectionDeps, 'sealer' | 'baseUrl'>,
  query: ListCollectionsQuery,
): Promise<Page<CollectionResponse>> {
  const page = await repo.listCollections(db, ctx, query);
  return { ...page, items: page.items.map((r) => toResponse(d, r)) };
}

/** The business's fee on a collection: `fees.collection_<method>` setting, else the configured percent. */
export function collectionFee(settings: BusinessSettings, row: repo.CollectionRow, config: CollectionDeps['config']): bigint {
  const [whole, frac = ''] = config.COLLECTION_FEE_PERCENT.split('.');
  const table = settings.fees?.[`collection_${row.method}`] ?? { '*': { bps: Number(whole) * 100 + Number(frac.padEnd(2, '0')) } };
  const fee = feeOf(table, row.currency, row.amount);
  return fee > row.amount ? row.amount : fee;
}
