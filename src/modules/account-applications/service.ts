import type { Config } from '../../config.js';
import type { Lock } from '../../db/scoped.js';
import type { Queryable, Trx } from '../../db/client.js';
import type { RequestContext, Scope } from '../../core/context.js';
import { AppError, notFound, validationError } from '../../core/errors.js';
import type { Page } from '../../db/pagination.js';
import { omitNulls } from '../../lib/absent.js';
import { newId } from '../../lib/ids.js';
import { isKnownCurrency } from '../../lib/money.js';
import * as accounts from '../accounts/service.js';
import { requireCustomer } from '../customers/service.js';
import * as repo from './repo.js';
import type {
  ApplicationData,
  ApplicationResponse,
  ApplicationStatus,
  CreateApplicationBody,
  ListApplicationsQuery,
  ProcessingResult,
  ValidationIssue,
} from './schema.js';

type SettingsScope = Scope & Pick<RequestContext, 'settings'>;
type Customer = Awaited<ReturnType<typeof requireCustomer>>;
const ACTOR = 'api';

export function toApplicationResponse(row: repo.ApplicationRow): ApplicationResponse {
  const iso = (d: Date | null) => (d ? d.toISOString() : null);
  // Absent, never null, where the reference types the field as a string (docs/api-rules.md#absent-values).
  return omitNulls(
    {
      id: row.id,
      tenant_id: row.tenant_id,
      customer_id: row.customer_id,
      application_type: row.application_type,
      status: row.status,
      data: row.data,
      metadata: row.metadata,
      validation_errors: row.validation_errors,
      account_id: row.account_id,
      submitted_at: iso(row.submitted_at),
      processed_at: iso(row.processed_at),
      created_at: row.created_at.toISOString(),
      updated_at: row.updated_at.toISOString(),
      deleted_at: iso(row.deleted_at),
    },
    ['submitted_at', 'processed_at'],
  );
}

/** Business rules on an application's data (the schema already checked the shapes). */
export function validateData(
  type: 'individual' | 'business',
  data: ApplicationData,
  customer: Customer | undefined,
  config: Config,
): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  if (!config.SUPPORTED_CURRENCIES.includes(data.currency) || !isKnownCurrency(data.currency)) {
    issues.push({
      field: 'data.currency',
      code: 'unsupported',
      message: `Accounts in ${data.currency} are not supported`,
      suggestion: `Use one of ${config.SUPPORTED_CURRENCIES.join(', ')}`,
    });
  }
  if (!data[type]) issues.push({ field: `data.${type}`, code: 'required', message: `An ${type} application needs data.${type}` });
  const otherType = type === 'individual' ? 'business' : 'individual';
  if (data[otherType]) issues.push({ field: `data.${otherType}`, code: 'not_allowed', message: `Not part of an ${type} application` });
  if (customer && customer.type !== type) {
    issues.push({ field: 'application_type', code: 'mismatch', message: `The customer is a ${customer.type} customer` });
  }
  return issues;
}

async function load(trx: Queryable, ctx: SettingsScope, id: string, lock: Lock | undefined = 'update') {
  const row = await repo.findApplication(trx, ctx, id, lock);
  if (!row) throw notFound('Application');
  return row;
}

function requireStatus(row: repo.ApplicationRow, allowed: ApplicationStatus[], action: string) {
  if (!allowed.includes(row.status)) {
    throw new AppError('invalid_state_transition', `Cannot ${action} an application that is ${row.status}`);
  }
}

export async function createApplication(trx: Trx, ctx: SettingsScope, body: CreateApplicationBody): Promise<ApplicationResponse> {
  await requireCustomer(trx, ctx, body.customer_id);
  const id = newId();
  await repo.insertApplication(trx, {
    id,
    tenant_id: ctx.tenantId,
    environment: ctx.environment,
    customer_id: body.customer_id,
    application_type: body.application_type,
    data: JSON.stringify(body.data),
    metadata: JSON.stringify(body.metadata ?? {}),
    tos_agreement_id: body.data.agreement_id ?? null,
    account_id: null,
    submitted_at: null,
    processed_at: null,
    deleted_at: null,
  });
  await repo.addHistory(trx, ctx, id, 'created', ACTOR, { status: 'draft' });
  return toApplicationResponse(await load(trx, ctx, id, undefined));
}

export async function getApplication(db: Queryable, ctx: SettingsScope, id: string) {
  return toApplicationResponse(await load(db, ctx, id, undefined));
}

export async function listApplications(
  db: Queryable,
  ctx: SettingsScope,
  query: ListApplicationsQuery,
  statuses?: ApplicationStatus[],
): Promise<Page<ApplicationResponse>> {
  const page = await repo.listApplications(db, ctx, query, statuses);
  return { ...page, items: page.items.map(toApplicationResponse) };
}

export async function updateApplication(trx: Trx, ctx: SettingsScope, id: string, data: ApplicationData) {
  requireStatus(await load(trx, ctx, id), ['draft'], 'update');
  const row = await repo.updateApplication(trx, id, { data: JSON.stringify(data), validation_errors: '[]' });
  await repo.addHistory(trx, ctx, id, 'updated', ACTOR, { fields: Object.keys(data) });
  return toApplicationResponse(row);
}

export async function deleteApplication(trx: Trx, ctx: SettingsScope, id: string) {
  requireStatus(await load(trx, ctx, id), ['draft', 'rejected'], 'delete');
  await repo.updateApplication(trx, id, { deleted_at: new Date() });
  await repo.addHistory(trx, ctx, id, 'deleted', ACTOR);
  return { success: true, message: 'Application deleted' };
}

export async function acceptTos(trx: Trx, ctx: SettingsScope, id: string, agreementId: string) {
  requireStatus(await load(trx, ctx, id), ['draft'], 'accept terms for');
  const row = await repo.updateApplication(trx, id, { tos_agreement_id: agreementId });
  await repo.addHistory(trx, ctx, id, 'tos_accepted', ACTOR, { agreement_id: agreementId });
  return toApplicationResponse(row);
}

/** draft -> submitted, once the data passes validation (else 400 with every issue). */
export async function submitApplication(trx: Trx, ctx: SettingsScope, id: string, config: Config) {
  const row = await load(trx, ctx, id);
  requireStatus(row, ['draft'], 'submit');
  const customer = await requireCustomer(trx, ctx, row.customer_id);
  const issues = validateData(row.application_type, row.data as ApplicationData, customer, config);
  if (issues.length > 0) {
    throw validationError(
      issues.map(({ field, code, message }) => ({ field, code, message })),
      'The application is incomplete',
    );
  }
  const updated = await repo.updateApplication(trx, id, { status: 'submitted', submitted_at: new Date(), validation_errors: '[]' });
  await repo.addHistory(trx, ctx, id, 'submitted', ACTOR, { status: 'submitted' });
  return toApplicationResponse(updated);
}

/**
 * The decision. Sandbox follows the magic last names (docs/api-rules.md#sandbox) (`Reject`, `Review`); otherwise
 * the customer's KYC decides: rejected -> rejected, approved -> approved, anything else in live
 * -> manual_review (a human decides).
 */
function decide(ctx: SettingsScope, customer: Customer): ApplicationStatus {
  const lastName = (customer.last_name ?? '').toLowerCase();
  if (customer.kyc_status === 'rejected' || (ctx.environment === 'sandbox' && lastName === 'reject')) return 'rejected';
  if (customer.kyc_status === 'manual_review' || (ctx.environment === 'sandbox' && lastName === 'review')) return 'manual_review';
  if (ctx.environment === 'live' && customer.kyc_status !== 'approved') return 'manual_review';
  return 'approved';
}

/** submitted -> processing -> approved (the account is opened) | rejected | manual_review. */
export async function processApplication(trx: Trx, ctx: SettingsScope, id: string, config: Config): Promise<ProcessingResult> {
  const row = await load(trx, ctx, id);
  requireStatus(row, ['submitted'], 'process');
  await repo.updateApplication(trx, id, { status: 'processing' });
  await repo.addHistory(trx, ctx, id, 'processing', 'system', { status: 'processing' });
  const customer = await requireCustomer(trx, ctx, row.customer_id);
  const status = decide(ctx, customer);
  const data = row.data as ApplicationData;
  const account =
    status === 'approved'
      ? await accounts.createAccount(
          trx,
          ctx,
          {
            currency: data.currency,
            type: data.account_type,
            label: data.label ?? 'main',
            customer_id: row.customer_id,
            metadata: { application_id: id },
          },
          config,
        )
      : null;
  await repo.updateApplication(trx, id, { status, processed_at: new Date(), account_id: account?.id ?? null });
  await repo.addHistory(trx, ctx, id, status, 'system', { status, ...(account ? { account_id: account.id } : {}) });
  const errors = status === 'rejected' ? [{ stage: 'kyc', code: 'kyc_rejected', message: 'The applicant did not pass verification' }] : [];
  return { application_id: id, status, account, errors, metadata: {} };
}

export async function submitAndProcess(trx: Trx, ctx: SettingsScope, id: string, config: Config) {
  await submitApplication(trx, ctx, id, config);
  const result = await processApplication(trx, ctx, id, config);
  return {
    application: await getApplication(trx, ctx, id),
    processing_result: result,
    is_fully_processed: result.status === 'approved' || result.status === 'rejected',
  };
}

export async function history(db: Queryable, ctx: SettingsScope, id: string) {
  await load(db, ctx, id, undefined);
  const rows = await repo.historyOf(db, id);
  return {
    application_id: id,
    history: rows.map((h) => ({
      id: h.id,
      application_id: h.application_id,
      action: h.action,
      actor: h.actor,
      changes: h.changes,
      created_at: h.created_at.toISOString(),
    })),
  };
}
