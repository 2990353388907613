import type { Queryable, Trx } from '../../db/client.js';
import type { Scope } from '../../core/context.js';
import { AppError, notFound, validationError, type ErrorDetail } from '../../core/errors.js';
import type { Page } from '../../db/pagination.js';
import { newId } from '../../lib/ids.js';
import { formatAmount, parseAmount } from '../../lib/money.js';
import { getAccount } from '../accounts/service.js';
import { requireCustomer } from '../customers/service.js';
import { recordEvent } from '../webhooks/service.js';
import * as repo from './repo.js';
import type { ApplicationResponse, ApplicationStatus, CreateApplicationBody, ListApplicationsQuery } from './schema.js';
import { billingAddressOf, cardCurrency, type CardDeps } from './service.js';

/** Card applications: the issuer's onboarding of a customer for cards (reference: /v1/cards/applications). */

/** The reference's `status`: the card lifecycle value an application leads to (docs/api-rules.md#closed-lists). */
function cardStatusOf(status: ApplicationStatus): ApplicationResponse['status'] {
  if (status === 'approved') return 'active';
  if (status === 'denied' || status === 'locked' || status === 'canceled') return 'blocked';
  return 'inactive';
}

function toApplicationResponse(a: repo.ApplicationRow, address: repo.BillingAddress): ApplicationResponse {
  const status = a.status as ApplicationStatus;
  return {
    id: a.id,
    customer_id: a.customer_id,
    account_id: a.account_id,
    currency: a.currency,
    network: 'visa',
    status: cardStatusOf(status),
    application_status: status,
    annual_remuneration: formatAmount(a.annual_remuneration, a.currency),
    estimated_monthly_limit: formatAmount(a.estimated_monthly_limit, a.currency),
    address: {
      street: address.street,
      city: address.city,
      state: address.state,
      postal_code: address.postal_code,
      country_code: address.country_iso_code,
    },
    date_created: a.created_at.toISOString(),
    date_updated: a.updated_at.toISOString(),
  };
}

/** The sandbox issuer decides at once from the customer's KYC result. */
function decideApplication(kycStatus: string): ApplicationStatus {
  if (kycStatus === 'approved') return 'approved';
  if (kycStatus === 'rejected') return 'denied';
  if (kycStatus === 'manual_review') return 'manual_review';
  return 'needs_verification';
}

/** The account an application links to: this business's, and the customer's own (or the business's). */
async function requireLinkedAccount(db: Queryable, ctx: Scope, customerId: string, accountId: string) {
  const account = await getAccount(db, ctx, accountId).catch((err: unknown) => {
    if (err instanceof AppError && err.code === 'not_found') {
      throw notFound('Account', [{ field: 'account_id', code: 'not_found', message: 'No such account' }]);
    }
    throw err;
  });
  if (account.customer_id !== null && account.customer_id !== customerId) {
    throw validationError([{ field: 'account_id', code: 'mismatch', message: 'The account belongs to another customer' }]);
  }
}

export async function createApplication(trx: Trx, ctx: Scope, body: CreateApplicationBody, deps: CardDeps) {
  const currency = cardCurrency(body.currency, deps.config);
  const details: ErrorDetail[] = [];
  const amount = (field: 'annual_remuneration' | 'estimated_monthly_limit') => {
    try {
      return parseAmount(body[field], currency, field);
    } catch (err) {
      if (err instanceof AppError) details.push(...err.details);
      return 0n;
    }
  };
  const annual = amount('annual_remuneration');
  const monthly = amount('estimated_monthly_limit');
  if (details.length > 0) throw new AppError('invalid_amount', undefined, details);
  const customer = await requireCustomer(trx, ctx, body.customer_id);
  await requireLinkedAccount(trx, ctx, customer.id, body.account_id);
  const id = newId();
  await repo.insertApplication(trx, {
    id,
    tenant_id: ctx.tenantId,
    environment: ctx.environment,
    customer_id: customer.id,
    account_id: body.account_id,
    annual_remuneration: annual,
    estimated_monthly_limit: monthly,
    currency,
    ip_address: body.ip_address,
    status: decideApplication(customer.kyc_status),
  });
  const application = await getApplication(trx, ctx, id);
  await recordEvent(trx, ctx, 'cards.application.update', application);
  return { message: 'Card application request successful', id, status: application.status, application };
}

export async function getApplication(db: Queryable, ctx: Scope, id: string): Promise<ApplicationResponse> {
  const row = await repo.findApplication(db, ctx, id);
  if (!row) throw notFound('Card application');
  const customer = await requireCustomer(db, ctx, row.customer_id);
  return toApplicationResponse(row, billingAddressOf(customer));
}

export async function listApplications(db: Queryable, ctx: Scope, query: ListApplicationsQuery): Promise<Page<ApplicationResponse>> {
  const page = await repo.listApplications(db, ctx, query);
  const items: ApplicationResponse[] = [];
  for (const row of page.items) {
    items.push(toApplicationResponse(row, billingAddressOf(await requireCustomer(db, ctx, row.customer_id))));
  }
  return { ...page, items };
}

/** Sandbox: the issuer moves an application (approved, denied, ...). */
export async function simulateApplication(trx: Trx, ctx: Scope, id: string, status: ApplicationStatus) {
  const row = await repo.findApplication(trx, ctx, id, 'update');
  if (!row) throw notFound('Card application');
  if (['denied', 'canceled'].includes(row.status)) {
    throw new AppError('invalid_state_transition', `The application is ${row.status}`);
  }
  if (row.status !== status) {
    await repo.setApplicationStatus(trx, ctx, id, status);
    const application = await getApplication(trx, ctx, id);
    await recordEvent(trx, ctx, 'cards.application.update', application);
    return application;
  }
  return getApplication(trx, ctx, id);
}
