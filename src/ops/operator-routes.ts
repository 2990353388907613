import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../core/errors.js';
import type { Deps } from '../http/deps.js';
import { html, type Html } from '../dashboard/html.js';
import { alert, copyable, table, when } from '../dashboard/layout.js';
import { opsCsrf, opsPage } from './layout.js';
import * as repo from './repo.js';
import { OPS_ROLES } from './roles.js';
import * as service from './service.js';
import type { OpsSession } from './service.js';
import { allowed, formOf, seeOther, sendPage, uuidParam } from './replies.js';

/** The operators' page: the list, with the form to add one. */
async function operatorsPage(deps: Deps, session: OpsSession, notice?: Html): Promise<Html> {
  const rows = await repo.listOperators(deps.db);
  return opsPage(
    session,
    'operators',
    'Operators',
    html`${table(
      'Operators',
      [
        { label: 'Email', cell: (r) => r.email },
        { label: 'Role', cell: (r) => r.role },
        { label: 'State', cell: (r) => (r.disabled_at ? 'disabled' : r.password_hash ? 'active' : 'setup link sent') },
        { label: 'Second factor', cell: (r) => (r.totp_secret_sealed ? 'yes' : 'no') },
        { label: 'Added', cell: (r) => when(r.created_at.toISOString()) },
        {
          label: 'Actions',
          cell: (r) =>
            r.id === session.operatorId
              ? '—'
              : html`<form method="post" action="/ops/operators/${r.id}/reset" class="inline" data-confirm="Reset ${r.email}? Their password, second factor and sessions stop working.">${opsCsrf(session)}<button type="submit">New setup link</button></form>
<form method="post" action="/ops/operators/${r.id}/${r.disabled_at ? 'enable' : 'disable'}" class="inline">${opsCsrf(session)}<button type="submit">${r.disabled_at ? 'Enable' : 'Disable'}</button></form>`,
        },
      ],
      rows,
      'No operators.',
    )}
<h2>Add an operator</h2>
<form method="post" action="/ops/operators" class="stack">${opsCsrf(session)}
  <div class="field"><label for="op-email">Email</label><input id="op-email" name="email" type="email" required></div>
  <div class="field"><label for="op-role">Role</label><select id="op-role" name="role">${OPS_ROLES.map((r) => html`<option value="${r}">${r}</option>`)}</select></div>
  <button type="submit">Add operator</button>
</form>`,
    notice,
  );
}

/** The one-time setup link, shown once to the admin who made it. */
function linkNotice(email: string, path: string, request: FastifyRequest): Html {
  return alert(
    'success',
    html`Give ${email} this one-time setup link (valid ${service.SETUP_HOURS} hours, shown only now): ${copyable('setup-link', 'Setup link', `${request.protocol}://${request.host}${path}`)}`,
  );
}

/** Operators: an admin adds them (a one-time setup link), resets and disables them. */
export function operatorRoutes(deps: Deps) {
  return async function plugin(app: FastifyInstance) {
    app.get('/operators', async (request, reply) => sendPage(reply, await operatorsPage(deps, allowed(request, 'operators'))));

    app.post('/operators', async (request, reply) => {
      const session = allowed(request, 'operators');
      const form = formOf(request);
      try {
        const created = await deps.inTransaction((trx) =>
          service.createOperator(trx, session, form.get('email') ?? '', form.get('role') ?? ''),
        );
        return sendPage(reply, await operatorsPage(deps, session, linkNotice(created.email, created.setupPath, request)));
      } catch (err) {
        if (err instanceof service.OperatorExists)
          return sendPage(reply, await operatorsPage(deps, session, alert('error', 'An operator with this email already exists.')), 409);
        if (err instanceof AppError && err.code === 'validation_failed')
          return sendPage(reply, await operatorsPage(deps, session, alert('error', err.message)), 400);
        throw err;
      }
    });

    app.post('/operators/:id/reset', async (request, reply) => {
      const session = allowed(request, 'operators');
      const id = (request.params as { id: string }).id;
      const done = await deps.inTransaction((trx) => service.resetOperator(trx, session, uuidParam(id)));
      return sendPage(reply, await operatorsPage(deps, session, linkNotice(done.email, done.setupPath, request)));
    });

    for (const action of ['disable', 'enable'] as const) {
      app.post(`/operators/:id/${action}`, async (request, reply) => {
        const session = allowed(request, 'operators');
        const id = uuidParam((request.params as { id: string }).id);
        await deps.inTransaction((trx) => service.setOperatorDisabled(trx, session, id, action === 'disable'));
        return seeOther(reply, '/ops/operators');
      });
    }
  };
}

/** The audit log: newest first, filtered by action or target, exported as CSV. */
export function auditRoutes(deps: Deps) {
  return async function plugin(app: FastifyInstance) {
    const filters = (request: FastifyRequest) => {
      const q = request.query as Record<string, string | undefined>;
      return {
        action: q.action && /^[a-z_.]{1,60}$/.test(q.action) ? q.action : undefined,
        target: q.target && /^[\w-]{1,80}$/.test(q.target) ? q.target : undefined,
      };
    };

    app.get('/audit', async (request, reply) => {
      const session = allowed(request, 'audit');
      const f = filters(request);
      const rows = await repo.listAudit(deps.db, { ...f, limit: 200 });
      const body = html`<form method="get" action="/ops/audit" class="filters" role="search">
  <div class="field"><label for="f-action">Action</label><input id="f-action" name="action" value="${f.action ?? ''}"></div>
  <div class="field"><label for="f-target">Target id</label><input id="f-target" name="target" value="${f.target ?? ''}"></div>
  <div class="field actions"><button type="submit">Filter</button> <a href="/ops/audit">Clear</a></div>
</form>
<p><a href="/ops/audit.csv${f.action || f.target ? `?${new URLSearchParams(Object.entries(f).filter((e): e is [string, string] => Boolean(e[1]))).toString()}` : ''}" download>Export CSV</a> (up to 10,000 rows, newest first)</p>
${table(
  'Audit log',
  [
    { label: 'When', cell: (r) => when(r.at.toISOString()) },
    { label: 'Operator', cell: (r) => r.operator_email },
    { label: 'Action', cell: (r) => html`<code>${r.action}</code>` },
    { label: 'Target', cell: (r) => html`${r.target_type} <code class="id">${r.target_id}</code>` },
    { label: 'Reason', cell: (r) => r.reason },
    { label: 'Detail', cell: (r) => html`<code>${JSON.stringify(r.detail)}</code>` },
  ],
  rows,
  'Nothing recorded yet.',
)}`;
      return sendPage(reply, opsPage(session, 'audit', 'Audit log', body));
    });

    app.get('/audit.csv', async (request, reply) => {
      allowed(request, 'audit');
      const rows = await repo.listAudit(deps.db, { ...filters(request), limit: 10_000 });
      return reply
        .type('text/csv; charset=utf-8')
        .header('Content-Disposition', 'attachment; filename="ops-audit-log.csv"')
        .send(service.auditCsv(rows));
    });
  };
}
