import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Environment } from '../core/context.js';
import { AppError, notFound } from '../core/errors.js';
import type { Deps } from '../http/deps.js';
import { alert } from '../dashboard/layout.js';
import { reviewCase } from '../modules/kyc/service.js';
import * as repo from './repo.js';
import { allowed, formOf, sendPage, seeOther, uuidParam } from './replies.js';
import { audit, type OpsSession } from './service.js';
import { casePage, INLINE_TYPES, queuePage, REJECT_LABELS, REQUESTABLE_DOCUMENTS } from './kyc-pages.js';

export function kycRoutes(deps: Deps) {
  return async function plugin(app: FastifyInstance) {
    app.get('/kyc', async (request, reply) => {
      const session = allowed(request, 'kyc.read');
      return sendPage(reply, await queuePage(deps, session, request.query as Record<string, string | undefined>));
    });

    app.get('/kyc/:id', async (request, reply) => {
      const session = allowed(request, 'kyc.read');
      return casePage(deps, reply, session, uuidParam((request.params as { id: string }).id));
    });

    app.post('/kyc/:id/decide', async (request, reply) => {
      const session = allowed(request, 'kyc.decide');
      const id = uuidParam((request.params as { id: string }).id);
      const c = await repo.findCaseById(deps.db, id);
      if (!c) throw notFound('Case');
      const decision = decisionOf(formOf(request));
      if ('problem' in decision) return casePage(deps, reply, session, id, alert('error', decision.problem), 400);
      return recordDecision(deps, reply, session, c, decision);
    });

    app.get('/kyc/documents/:id', async (request, reply) => {
      const session = allowed(request, 'kyc.documents');
      const doc = await repo.documentContent(deps.db, uuidParam((request.params as { id: string }).id));
      if (!doc) throw notFound('Document');
      await audit(deps.db, session, {
        action: 'kyc.document_viewed',
        targetType: 'kyc_document',
        targetId: doc.id,
        tenantId: doc.tenant_id,
      });
      const inline = INLINE_TYPES.has(doc.content_type);
      // Shown inside the case page only (frame-ancestors 'self'), never cached (no-store from the guard).
      reply.header('Content-Security-Policy', "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; frame-ancestors 'self'");
      reply.header('X-Frame-Options', 'SAMEORIGIN');
      reply.header('Cache-Control', 'no-store');
      reply.header('Content-Disposition', inline ? 'inline' : 'attachment; filename="document.bin"');
      return reply.type(inline ? doc.content_type : 'application/octet-stream').send(doc.content);
    });
  };
}

type Case = NonNullable<Awaited<ReturnType<typeof repo.findCaseById>>>;

interface Decision {
  decision: 'approve' | 'reject' | 'request_documents';
  reason: string;
  version: Date;
  labels: string[];
  rejectType: 'RETRY' | 'FINAL';
  requested: string[];
}

/** The decision form read and checked: what the operator decided, or what to fix first. */
function decisionOf(form: URLSearchParams): Decision | { problem: string } {
  const decision = form.get('decision');
  const reason = (form.get('reason') ?? '').trim().slice(0, 1000);
  const version = new Date(form.get('version') ?? '');
  if (decision !== 'approve' && decision !== 'reject' && decision !== 'request_documents')
    return { problem: 'Choose approve, reject or request documents.' };
  if (Number.isNaN(version.getTime())) return { problem: 'Reload the case and decide again.' };
  let labels: string[] = [];
  let rejectType: 'RETRY' | 'FINAL' = 'RETRY';
  let requested: string[] = [];
  if (decision === 'reject') {
    const label = form.get('label') ?? '';
    const type = form.get('reject_type');
    if (!(REJECT_LABELS as readonly string[]).includes(label)) return { problem: 'Choose the reason label of the rejection.' };
    if (type !== 'RETRY' && type !== 'FINAL') return { problem: 'Choose RETRY (the customer may try again) or FINAL.' };
    if (!reason) return { problem: 'Say why the case is rejected.' };
    labels = [label];
    rejectType = type;
  }
  if (decision === 'request_documents') {
    requested = form.getAll('documents').filter((d) => (REQUESTABLE_DOCUMENTS as readonly string[]).includes(d));
    if (requested.length === 0) return { problem: 'Choose at least one document to ask for.' };
    if (!reason) return { problem: 'Say what is wrong with the documents the customer sent.' };
    labels = ['ADDITIONAL_DOCUMENTS_REQUESTED', ...requested.map((d) => `REQUESTED_${d}`)];
  }
  return { decision, reason, version, labels, rejectType, requested };
}

/** Records the decision on the case with its audit entry; a case decided meanwhile answers 409. */
async function recordDecision(deps: Deps, reply: FastifyReply, session: OpsSession, c: Case, d: Decision) {
  const { decision, reason, version, labels, rejectType, requested } = d;
  const id = c.id;
  const ctx = { tenantId: c.tenant_id, environment: c.environment as Environment };
  const outcome = decision === 'approve' ? 'approved' : 'rejected';
  try {
    await deps.inTransaction(async (trx) => {
      await reviewCase(trx, ctx, c.customer_id, outcome, c.level, { caseId: c.id, seenVersion: version, labels, rejectType });
      await audit(trx, session, {
        action: `kyc.${decision === 'approve' ? 'approved' : decision === 'reject' ? 'rejected' : 'documents_requested'}`,
        targetType: 'kyc_case',
        targetId: c.id,
        tenantId: c.tenant_id,
        environment: c.environment,
        reason: reason || null,
        detail: {
          customer_id: c.customer_id,
          level: c.level,
          ...(outcome === 'rejected' ? { labels, reject_type: rejectType } : {}),
          ...(requested.length ? { documents: requested } : {}),
        },
      });
    });
  } catch (err) {
    if (err instanceof AppError && err.code === 'invalid_state_transition') {
      return casePage(deps, reply, session, id, alert('error', `Not saved: ${err.message}. Nothing was changed by your decision.`), 409);
    }
    throw err;
  }
  return seeOther(reply, `/ops/kyc/${c.id}`);
}
