import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Trx } from '../db/client.js';
import { AppError, notFound } from '../core/errors.js';
import type { Deps } from '../http/deps.js';
import { alert } from '../dashboard/layout.js';
import * as bank from '../modules/bank-files/service.js';
import { allowed, formOf, sendPage, seeOther, uuidParam } from './replies.js';
import { audit, type OpsSession } from './service.js';
import { bankHomePage, connectionPage, exceptionsPage, filePage, notFoundPage, reconciliationsPage } from './bank-pages.js';

const idOf = (request: { params: unknown }) => uuidParam((request.params as { id: string }).id);
const reasonOf = (form: URLSearchParams) => (form.get('reason') ?? '').trim().slice(0, 500);

/** What a refused bank action tells the operator, and with which status (anything else is ours). */
function refusal(err: unknown): { status: number; message: string } | undefined {
  if (!(err instanceof AppError)) return undefined;
  if (err.code === 'invalid_state_transition')
    return { status: 409, message: `Not recorded: ${err.message} (another operator may have resolved it first; reload to see).` };
  if (err.code === 'not_found') return { status: 404, message: `Not recorded: ${err.message}` };
  if (err.code === 'currency_mismatch' || err.code === 'validation_failed' || err.code === 'conflict')
    return { status: 422, message: `Not recorded: ${err.message}` };
  return undefined;
}

/**
 * The bank file exchange seen by operators: connections, the files both ways with their XML,
 * the exceptions queue (assign or return, through the same service calls as the operator API and
 * the CLI, each decision in the audit log), and the statement reconciliations.
 */
export function bankRoutes(deps: Deps, bankDeps: bank.BankDeps) {
  return async function plugin(app: FastifyInstance) {
    connectionRoutes(app, deps, bankDeps);
    fileRoutes(app, deps);
    exceptionRoutes(app, deps, bankDeps);
    reconciliationRoutes(app, deps);
  };
}

/** The connections, and an exchange run now. */
function connectionRoutes(app: FastifyInstance, deps: Deps, bankDeps: bank.BankDeps): void {
  const unit = deps.inTransaction.bind(deps);
  app.get('/bank', async (request, reply) => {
    const session = allowed(request, 'bank.read');
    return sendPage(reply, await bankHomePage(deps, session));
  });

  app.get('/bank/connections/:id', async (request, reply) => {
    const session = allowed(request, 'bank.read');
    return connectionPage(deps, reply, session, idOf(request));
  });

  app.post('/bank/connections/:id/exchange', async (request, reply) => {
    const session = allowed(request, 'bank.act');
    const id = idOf(request);
    const reason = reasonOf(formOf(request));
    if (!reason) return connectionPage(deps, reply, session, id, alert('error', 'Give the reason for running the exchange now.'), 400);
    let result: bank.ExchangeResult;
    try {
      result = await bank.exchange(unit, deps.db, id, bankDeps);
    } catch (err) {
      const r = refusal(err);
      if (r) return connectionPage(deps, reply, session, id, alert('error', r.message), r.status);
      // A transport failure (the bank's server unreachable): told, and audited as tried.
      const message = err instanceof Error ? err.message : String(err);
      await audit(deps.db, session, {
        action: 'bank.exchange_failed',
        targetType: 'bank_connection',
        targetId: id,
        reason,
        detail: { error: message.slice(0, 500) },
      });
      return connectionPage(deps, reply, session, id, alert('error', `The exchange failed: ${message}`), 502);
    }
    const detail = {
      cut: result.cut.file?.filename ?? null,
      refused: result.cut.refused.length,
      delivered: result.delivered,
      imported: result.imported.map((i) => i.filename),
      rejected: result.rejected,
    };
    await audit(deps.db, session, { action: 'bank.exchange', targetType: 'bank_connection', targetId: id, reason, detail });
    const notice = alert(
      result.rejected.length ? 'error' : 'success',
      `Exchange done: ${detail.cut ? `cut ${detail.cut}` : 'nothing to cut'}; delivered ${detail.delivered.length}; imported ${detail.imported.length}; refused ${detail.rejected.length}${
        detail.rejected.length ? ` (${detail.rejected.map((r) => `${r.filename}: ${r.error}`).join('; ')})` : ''
      }.`,
    );
    return connectionPage(deps, reply, session, id, notice);
  });
}

/** A file's page and its XML download. */
function fileRoutes(app: FastifyInstance, deps: Deps): void {
  app.get('/bank/files/:id', async (request, reply) => {
    const session = allowed(request, 'bank.read');
    const file = await bank.getFile(deps.db, idOf(request)).catch(notFoundPage);
    return sendPage(reply, await filePage(deps, session, file));
  });

  app.get('/bank/files/:id/download', async (request, reply) => {
    allowed(request, 'bank.read');
    const file = await bank.getFile(deps.db, idOf(request)).catch(notFoundPage);
    if (file.content === null) throw notFound('File content');
    const name = file.filename.replace(/[^A-Za-z0-9._-]/g, '_');
    return reply
      .header('content-type', 'application/xml; charset=utf-8')
      .header('content-disposition', `attachment; filename="${name}"`)
      .header('cache-control', 'no-store')
      .send(file.content);
  });
}

/** Resolves an exception with its audit entry; a refusal is shown on the queue page. */
async function resolveException(deps: Deps, reply: FastifyReply, session: OpsSession, work: (trx: Trx) => Promise<void>) {
  try {
    await deps.inTransaction(work);
  } catch (err) {
    const r = refusal(err);
    if (!r) throw err;
    return exceptionsPage(deps, reply, session, 'open', alert('error', r.message), r.status);
  }
  return seeOther(reply, '/ops/bank/exceptions?status=open');
}

/** The exceptions queue: assign a credit to its account, or record the money returned. */
function exceptionRoutes(app: FastifyInstance, deps: Deps, bankDeps: bank.BankDeps): void {
  app.get('/bank/exceptions', async (request, reply) => {
    const session = allowed(request, 'bank.read');
    const q = request.query as Record<string, string | undefined>;
    return exceptionsPage(deps, reply, session, q.status ?? 'open');
  });

  app.post('/bank/exceptions/:id/assign', async (request, reply) => {
    const session = allowed(request, 'bank.act');
    const id = idOf(request);
    const form = formOf(request);
    const reason = reasonOf(form);
    const account = (form.get('account_id') ?? '').trim().toLowerCase();
    if (!reason || !account)
      return exceptionsPage(
        deps,
        reply,
        session,
        'open',
        alert('error', 'Give the account and the reason (how you know whose money it is).'),
        400,
      );
    return resolveException(deps, reply, session, async (trx) => {
      const done = await bank.assignException(trx, id, account, reason, bankDeps);
      await audit(trx, session, {
        action: 'bank.exception.assigned',
        targetType: 'bank_exception',
        targetId: id,
        reason,
        detail: { account_id: done.account_id, amount: done.amount, currency: done.currency },
      });
    });
  });

  app.post('/bank/exceptions/:id/return', async (request, reply) => {
    const session = allowed(request, 'bank.act');
    const id = idOf(request);
    const reason = reasonOf(formOf(request));
    if (!reason) return exceptionsPage(deps, reply, session, 'open', alert('error', 'Give the reason for returning the money.'), 400);
    return resolveException(deps, reply, session, async (trx) => {
      const done = await bank.returnException(trx, id, reason);
      await audit(trx, session, {
        action: 'bank.exception.returned',
        targetType: 'bank_exception',
        targetId: id,
        reason,
        detail: { amount: done.amount, currency: done.currency, payer_name: done.payer_name },
      });
    });
  });
}

/** The statement reconciliations. */
function reconciliationRoutes(app: FastifyInstance, deps: Deps): void {
  app.get('/bank/reconciliations', async (request, reply) => {
    const session = allowed(request, 'bank.read');
    return sendPage(reply, await reconciliationsPage(deps, session));
  });
}
