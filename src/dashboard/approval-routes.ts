import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Deps } from '../http/deps.js';
import { AppError, notFound } from '../core/errors.js';
import { statusOf } from '../http/errors.js';
import { PageQuery } from '../db/pagination.js';
import { isUuid, newId } from '../lib/ids.js';
import { listApprovals, parsePolicy, validateSetting, type ApprovalPolicy } from '../modules/approvals/service.js';
import { getTenant, setSettings } from '../modules/tenants/service.js';
import { decideApproval } from '../workers/approvals.js';
import { APPROVAL_KINDS, APPROVAL_STATUSES, approvalsPage } from './approval-pages.js';
import type { Html } from './html.js';
import { alert } from './layout.js';
import { formOf, seeOther, sendPage, sessionOf } from './replies.js';
import { requirePermission } from './roles.js';
import type { Session } from './service.js';
import { insertAudit } from './team-repo.js';

const ApprovalsQuery = PageQuery.extend({ status: z.enum(APPROVAL_STATUSES).optional(), kind: z.enum(APPROVAL_KINDS).optional() });

type Decision = 'approved' | 'rejected';

/** A mistake in the settings form, shown on the page. */
class SettingsError extends AppError {}

/** `USD 1000.00, NGN 0` → `{USD: "1000.00", NGN: "0"}`. */
function parseThresholds(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of text.split(',')) {
    if (!part.trim()) continue;
    const m = /^\s*([A-Za-z]{3})\s+(\d{1,15}(?:\.\d{1,4})?)\s*$/.exec(part);
    if (!m) throw new SettingsError('bad_request', `"${part.trim()}" is not a currency and an amount, such as USD 1000.00`);
    out[m[1]!.toUpperCase()] = m[2]!;
  }
  return out;
}

/**
 * The Approvals page (maker-checker): what waits for a second person, approve / reject (owners
 * and admins, never the request's maker), and when approval is needed in this environment.
 * Every decision and settings change goes to the audit log; a decision's entry commits with it.
 */
export function approvalRoutes(deps: Deps) {
  return async function plugin(app: FastifyInstance) {
    listPages(app, deps);
    decisionRoutes(app, deps);
    settingsRoutes(app, deps);
  };
}

async function settingsOf(deps: Deps, session: Session) {
  return ((await getTenant(deps.db, session.tenantId))?.settings ?? {}) as Record<string, unknown>;
}

/** The page still renders when the stored policy is unreadable: it shows no policy instead. */
async function policyOf(deps: Deps, session: Session): Promise<ApprovalPolicy | null> {
  try {
    return parsePolicy((await settingsOf(deps, session)).approvals, session.environment);
  } catch {
    return null;
  }
}

/** The approvals page; after a refused POST it shows the default filters (a POST has no query). */
async function render(deps: Deps, request: FastifyRequest, reply: FastifyReply, notice?: Html, status = 200) {
  const session = sessionOf(request);
  const q = (request.method === 'GET' ? (request.query ?? {}) : {}) as Record<string, string | undefined>;
  const filters = {
    status: q.status === undefined ? 'waiting_approval' : q.status || undefined,
    kind: q.kind || undefined,
    page: q.page || undefined,
  };
  const parsed = ApprovalsQuery.safeParse(filters);
  const page = await listApprovals(deps.db, session, parsed.success ? parsed.data : { page: 1, status: 'waiting_approval' });
  const shown = { status: filters.status ?? '', kind: filters.kind };
  return sendPage(reply, approvalsPage(session, shown, page, await policyOf(deps, session), notice), status);
}

function listPages(app: FastifyInstance, deps: Deps) {
  app.get('/approvals', async (request, reply) => render(deps, request, reply));
}

/** Approve or reject; a refusal (own request, already decided) shows its message on the page. */
async function decide(deps: Deps, request: FastifyRequest, reply: FastifyReply, decision: Decision) {
  const session = sessionOf(request);
  requirePermission(session.role, 'approvals');
  const id = (request.params as { id: string }).id;
  if (!isUuid(id)) throw notFound('Approval');
  const reason = (formOf(request).get('reason') ?? '').trim().slice(0, 200) || null;
  try {
    await decideApproval(
      deps.db,
      session,
      deps.config,
      id,
      decision,
      { userId: session.userId, email: session.email },
      reason,
      (trx, row) =>
        insertAudit(trx, {
          id: newId(),
          tenant_id: session.tenantId,
          environment: session.environment,
          user_id: session.userId,
          user_email: session.email,
          action: decision === 'approved' ? 'approval.approved' : 'approval.rejected',
          target: `${row.kind} ${row.subject_id}`,
          detail: reason ? `${row.summary} (reason: ${reason})` : row.summary,
        }),
    );
  } catch (err) {
    if (!(err instanceof AppError) || err.code === 'not_found') throw err;
    return render(deps, request, reply, alert('error', err.message), statusOf(err));
  }
  return seeOther(reply, '/dashboard/approvals');
}

function decisionRoutes(app: FastifyInstance, deps: Deps) {
  app.post('/approvals/:id/approve', async (request, reply) => decide(deps, request, reply, 'approved'));
  app.post('/approvals/:id/reject', async (request, reply) => decide(deps, request, reply, 'rejected'));
}

/** The settings of every environment with this one's replaced by the form; throws when invalid. */
function settingsFromForm(form: URLSearchParams, current: unknown, environment: Session['environment']): Record<string, unknown> {
  const hours = Number(form.get('expire_after_hours') || '24');
  const own = {
    fx_orders: form.get('fx_orders') === 'on',
    new_payees: form.get('new_payees') === 'on',
    payouts_above: parseThresholds(form.get('payouts_above') ?? ''),
    expire_after_hours: hours,
  };
  const next = { ...(current && typeof current === 'object' ? current : {}), [environment]: own };
  validateSetting(next);
  return next;
}

function settingsRoutes(app: FastifyInstance, deps: Deps) {
  app.post('/approvals/settings', async (request, reply) => {
    const session = sessionOf(request);
    requirePermission(session.role, 'approvals');
    const form = formOf(request);
    const current = (await settingsOf(deps, session)).approvals;
    let next: Record<string, unknown>;
    try {
      next = settingsFromForm(form, current, session.environment);
    } catch (err) {
      const message =
        err instanceof SettingsError ? err.message : 'Check the fields: amounts like 1000.00 in known currencies, 1 to 2160 hours.';
      return render(deps, request, reply, alert('error', message), 400);
    }
    await setSettings(deps.db, session.tenantId, { approvals: next });
    await insertAudit(deps.db, {
      id: newId(),
      tenant_id: session.tenantId,
      environment: session.environment,
      user_id: session.userId,
      user_email: session.email,
      action: 'approvals.settings_changed',
      target: session.environment,
      detail: JSON.stringify(next[session.environment]),
    });
    return seeOther(reply, '/dashboard/approvals');
  });
}
