import { latinOrRefuse } from '../../lib/latin.js';
import type { Config } from '../../config.js';
import type { Queryable, Trx, UnitOfWork } from '../../db/client.js';
import type { RequestContext, Scope } from '../../core/context.js';
import { AppError, notFound, validationError } from '../../core/errors.js';
import type { Page } from '../../db/pagination.js';
import { omitNulls } from '../../lib/absent.js';
import { newId } from '../../lib/ids.js';
import { findInstitution, listInstitutions, type Institution } from '../../lib/institutions.js';
import { formatAmount } from '../../lib/money.js';
import { isValidNuban, normalizeIban } from '../../lib/payee-validation.js';
import { payoutConnector, type PayeeDetails } from '../../rails/index.js';
import * as approvals from '../approvals/service.js';
import { requireCustomer } from '../customers/service.js';
import { recordEvent } from '../webhooks/service.js';
import * as repo from './repo.js';
import type { CreateExternalAccountBody, ExternalAccountResponse, ListExternalAccountsQuery, VerifyExternalAccountBody } from './schema.js';

export function toResponse(r: repo.ExternalAccountRow): ExternalAccountResponse {
  // Absent, never null, where the reference types the field as an enum or object (docs/api-rules.md#absent-values).
  return omitNulls(
    {
      id: r.id,
      customer_id: r.customer_id,
      payee_type: r.payee_type,
      account_number: r.account_number,
      iban: r.iban,
      bic: r.bic,
      routing_number: r.routing_number,
      sort_code: r.sort_code,
      account_name: r.account_name,
      bank_name: r.bank_name,
      institution_name: r.institution_name,
      institution_id: r.institution_id,
      institution_type: r.institution_type,
      institution_country_iso_code: r.institution_country,
      currency: r.currency,
      phone_number: r.phone_number,
      account_owner_type: r.account_owner_type,
      account_type: r.account_type,
      payment_rail: r.payment_rail,
      address: r.address,
      status: r.status,
      approval_status: r.approval_status,
      failure_reason: r.failure_reason,
      date_created: r.created_at.toISOString(),
      date_updated: r.updated_at.toISOString(),
    },
    ['institution_type', 'address', 'approval_status'],
  );
}

export function toInstitutionItem(i: Institution) {
  return {
    id: i.id,
    name: i.name,
    code: i.code,
    country_iso_code: i.country,
    currency: i.currency,
    account_number_type: i.accountNumberType,
    min_amount: formatAmount(i.minAmount, i.currency),
    max_amount: formatAmount(i.maxAmount, i.currency),
    logo_url: null,
    institution_type: i.type,
  };
}

/** Column values of a new payee (the schema has already checked every detail). */
function columnsOf(body: CreateExternalAccountBody) {
  const inst = 'institution_id' in body ? findInstitution(body.institution_id) : undefined;
  const get = <K extends string>(k: K) => (k in body ? (((body as Record<string, unknown>)[k] as string | undefined) ?? null) : null);
  const address = 'address' in body && body.address ? body.address : null;
  const cols = {
    account_number: get('account_number'),
    iban: get('iban'),
    bic: get('bic'),
    routing_number: get('routing_number'),
    sort_code: get('sort_code'),
    phone_number: get('phone_number'),
    account_owner_type: get('account_owner_type'),
    account_type: get('account_type'),
    payment_rail: body.payee_type === 'ach_wire' ? (body.payment_rail ?? 'wire') : null,
    institution_id: inst?.id ?? null,
    institution_name: inst?.name ?? null,
    institution_type: inst?.type ?? null,
    institution_country: inst?.country ?? (body.payee_type === 'fps' ? 'GB' : (address?.country ?? null)),
    bank_name: body.bank_name ?? inst?.name ?? null,
    address,
  };
  const identifier = [cols.routing_number, cols.sort_code, cols.bic, cols.iban ?? cols.account_number ?? cols.phone_number]
    .filter(Boolean)
    .join('/');
  return { cols, dedupeKey: `${body.payee_type}:${body.currency}:${inst?.id ?? ''}:${identifier}` };
}

/**
 * Creates a payee in `pending`; the verification job asks the rail's connector and moves it to
 * active or failed. A duplicate (same customer, type, currency, institution and account) returns
 * the existing payee instead of a second one, as the reference says.
 */
export async function createExternalAccount(
  trx: Trx,
  ctx: Scope & Pick<RequestContext, 'settings'>,
  body: CreateExternalAccountBody,
  config: Pick<Config, 'SANDBOX_RAIL_DELAY_MS'>,
): Promise<ExternalAccountResponse> {
  // A bank payout names its payee in the bank file's Latin set (accents are dropped there): a name
  // that cannot be written so is refused now, not sent broken later.
  if (body.payee_type !== 'mobile_money') latinOrRefuse(body.account_name, 'account_name');
  await requireCustomer(trx, ctx, body.customer_id);
  const { cols, dedupeKey } = columnsOf(body);
  const existing = await repo.findDuplicate(trx, ctx, body.customer_id, dedupeKey);
  if (existing) return toResponse(existing);
  const id = newId();
  const policy = approvals.policyOf(ctx);
  const inserted = await repo.insert(trx, {
    id,
    tenant_id: ctx.tenantId,
    environment: ctx.environment,
    customer_id: body.customer_id,
    payee_type: body.payee_type,
    account_name: body.account_name,
    currency: body.currency,
    dedupe_key: dedupeKey,
    // The sandbox partner takes its configured time to answer, like a real one would.
    verify_after: new Date(Date.now() + (ctx.environment === 'sandbox' ? config.SANDBOX_RAIL_DELAY_MS : 0)),
    ...cols,
    address: cols.address ? JSON.stringify(cols.address) : null,
    approval_status: policy.newPayees ? 'waiting_approval' : null,
  });
  const row = inserted ? await repo.find(trx, ctx, id) : await repo.findDuplicate(trx, ctx, body.customer_id, dedupeKey);
  if (!row) throw new AppError('conflict', 'The external account changed while it was being created; retry');
  const response = toResponse(row);
  if (inserted) await recordEvent(trx, ctx, 'payee.setup.pending', response);
  if (inserted && policy.newPayees) {
    const where = row.iban ?? row.account_number ?? row.phone_number ?? '';
    await approvals.requestApproval(trx, ctx, policy, {
      kind: 'payee',
      subjectId: id,
      summary: `New payee: ${row.account_name} (${row.payee_type}, ${row.currency}${where ? ` ${maskTail(where)}` : ''}${row.bank_name ? `, ${row.bank_name}` : ''})`,
      currency: row.currency,
    });
  }
  return response;
}

const maskTail = (value: string) => (value.length > 4 ? `…${value.slice(-4)}` : value);

/**
 * A new payee waiting for approval: approved, it goes to verification (and becomes `active` or
 * `failed` as any payee does); rejected or expired, it is `failed` with payee.setup.failed. Acts
 * once: the approvals module guards the approval row, the repo the payee row.
 */
export async function decidePayee(
  trx: Trx,
  ctx: Scope,
  id: string,
  outcome: 'approved' | 'rejected' | 'expired',
  reason: string | null,
  config: Pick<Config, 'SANDBOX_RAIL_DELAY_MS'>,
): Promise<ExternalAccountResponse> {
  const why = outcome === 'expired' ? 'approval_expired' : `approval_rejected${reason ? `: ${reason}` : ''}`;
  // Verification starts now, taking the sandbox partner's configured time as at creation.
  const verifyAfter = new Date(Date.now() + (ctx.environment === 'sandbox' ? config.SANDBOX_RAIL_DELAY_MS : 0));
  const row = await repo.finishApproval(trx, ctx, id, outcome, why, verifyAfter);
  if (!row) throw new AppError('invalid_state_transition', 'The external account is not waiting for approval');
  const response = toResponse(row);
  if (outcome !== 'approved') await recordEvent(trx, ctx, 'payee.setup.failed', response);
  return response;
}

export async function getExternalAccount(db: Queryable, ctx: Scope, id: string): Promise<ExternalAccountResponse> {
  const row = await repo.find(db, ctx, id);
  if (!row) throw notFound('External account');
  return toResponse(row);
}

/** For transfers: the payee row, 404 when unknown, deleted, or another business's. */
export async function requireExternalAccount(db: Queryable, ctx: Scope, id: string) {
  const row = await repo.find(db, ctx, id);
  if (!row) throw notFound('External account');
  return row;
}

export async function listExternalAccounts(
  db: Queryable,
  ctx: Scope,
  query: ListExternalAccountsQuery,
): Promise<Page<ExternalAccountResponse>> {
  const page = await repo.list(db, ctx, query);
  return { ...page, items: page.items.map(toResponse) };
}

export async function deleteExternalAccount(trx: Trx, ctx: Scope, id: string) {
  if (!(await repo.softDelete(trx, ctx, id))) throw notFound('External account');
  return { id, deleted: true, message: 'external account deleted successfully' };
}

export function payeeDetailsOf(r: repo.ExternalAccountRow): PayeeDetails {
  return {
    payeeType: r.payee_type,
    accountName: r.account_name,
    accountNumber: r.account_number,
    iban: r.iban,
    bic: r.bic,
    routingNumber: r.routing_number,
    sortCode: r.sort_code,
    phoneNumber: r.phone_number,
    institutionCode: r.institution_id ? (findInstitution(r.institution_id)?.code ?? null) : null,
    country: r.institution_country,
    currency: r.currency,
  };
}

/**
 * The verification job: asks the connector about each due pending payee (outside any
 * transaction: a real connector does network I/O), then records the answer with its event in
 * one short transaction of the worker's `unitOfWork`. Returns true when a full batch was found
 * (more may be waiting).
 */
export async function verifyDuePayees(
  db: Queryable,
  unitOfWork: UnitOfWork,
  config: Pick<Config, 'SANDBOX_RAIL_DELAY_MS'>,
  { batch = 20 }: { batch?: number } = {},
): Promise<boolean> {
  const due = await repo.claimDueVerifications(db, batch, 60);
  for (const row of due) {
    const ctx = { tenantId: row.tenant_id, environment: row.environment as Scope['environment'] };
    const result = await payoutConnector(ctx.environment, config).verifyAccount(payeeDetailsOf(row));
    await unitOfWork(async (trx) => {
      const outcome = result.verified
        ? ({ status: 'active', verifiedName: result.accountName } as const)
        : ({ status: 'failed', reason: result.reason } as const);
      const done = await repo.finishVerification(trx, ctx, row.id, outcome);
      if (done) await recordEvent(trx, ctx, result.verified ? 'payee.setup.completed' : 'payee.setup.failed', toResponse(done));
    });
  }
  return due.length === batch;
}

/** `POST /v1/external-accounts/verify`: a synchronous name enquiry before adding a payee. */
export async function verifyAccountDetails(ctx: Scope, body: VerifyExternalAccountBody, config: Pick<Config, 'SANDBOX_RAIL_DELAY_MS'>) {
  const identifier = body.iban ?? body.account_number ?? body.phone ?? body.clabe ?? body.routing_number;
  if (!identifier) {
    throw validationError([
      { field: 'account_number', code: 'required', message: 'Give account_number, iban, phone, clabe or routing_number' },
    ]);
  }
  const inst = body.institution_id ? findInstitution(body.institution_id) : undefined;
  if (body.institution_id && !inst) {
    throw validationError([
      { field: 'institution_id', code: 'invalid', message: 'Not an institution from GET /v1/external-accounts/institutions' },
    ]);
  }
  if (body.iban && !normalizeIban(body.iban)) {
    throw validationError([{ field: 'iban', code: 'invalid', message: 'Must be a valid IBAN' }]);
  }
  const formatOk = !(
    inst?.country === 'NG' &&
    inst.type === 'bank' &&
    body.account_number &&
    !isValidNuban(inst.code, body.account_number)
  );
  const candidates = inst ? [inst] : body.country_code ? listInstitutions({ country: body.country_code }) : [];
  // Name enquiry is offered for bank accounts and mobile money at a known institution, as in the reference.
  if (!inst || !formatOk || body.iban) {
    return unverified(identifier, candidates);
  }
  const result = await payoutConnector(ctx.environment, config).verifyAccount({
    payeeType: inst.type === 'bank' ? 'bank_account' : 'mobile_money',
    accountName: 'Account Holder',
    accountNumber: body.account_number ?? null,
    iban: null,
    bic: body.bic ?? null,
    routingNumber: body.routing_number ?? null,
    sortCode: null,
    phoneNumber: body.phone ?? null,
    institutionCode: inst.code,
    country: inst.country,
    currency: inst.currency,
  });
  if (!result.verified) return unverified(identifier, candidates);
  return {
    is_verified: true,
    account_name: result.accountName,
    account_number: identifier,
    account_status: 'active' as const,
    account_type: inst.type === 'bank' ? 'bank_account' : 'mobile_money',
    bank_name: inst.name,
    bank_code: inst.code,
    institutions: null,
  };
}

function unverified(identifier: string, candidates: Institution[]) {
  return {
    is_verified: false,
    account_name: null,
    account_number: identifier,
    account_status: null,
    account_type: null,
    bank_name: null,
    bank_code: null,
    institutions: candidates.slice(0, 100).map(toInstitutionItem),
  };
}
