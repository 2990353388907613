import type { FastifyInstance, FastifyReply } from 'fastify';
import { notFound } from '../core/errors.js';
import { BusinessSettings } from '../core/settings.js';
import type { Deps } from '../http/deps.js';
import { html, type Html } from '../dashboard/html.js';
import { alert, badge, facts, table, when } from '../dashboard/layout.js';
import { validateSetting } from '../modules/approvals/service.js';
import { InvalidSettings, setSettings } from '../modules/tenants/service.js';
import { decisionsTable, opsCsrf, opsPage } from './layout.js';
import * as repo from './repo.js';
import { opsCan } from './roles.js';
import { allowed, formOf, sendPage, seeOther, uuidParam } from './replies.js';
import { audit, type OpsSession } from './service.js';

/** The per-business settings the CLI's `tenant settings` edits (one schema: core/settings.ts). */
export const SETTING_KEYS = Object.keys(BusinessSettings.shape) as (keyof typeof BusinessSettings.shape)[];

/**
 * One setting's new value, checked exactly as `cli tenant settings --set KEY=JSON` checks it: JSON,
 * the approvals module's own check for `approvals`, then the strict settings schema on the merge.
 * An empty value removes the key (back to the configuration's default).
 */
export function parseSettingValue(key: string, text: string): { ok: true; value: unknown } | { ok: false; message: string } {
  if (!(SETTING_KEYS as string[]).includes(key)) return { ok: false, message: `Unknown setting ${key}` };
  if (text.trim() === '') return { ok: true, value: undefined };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, message: `${key}: the value must be JSON (quote strings: "text")` };
  }
  if (key === 'approvals') {
    try {
      validateSetting(value);
    } catch (err) {
      return { ok: false, message: `approvals: ${err instanceof Error ? err.message : String(err)} (see docs/approvals.md)` };
    }
  }
  return { ok: true, value };
}

export function businessRoutes(deps: Deps) {
  return async function plugin(app: FastifyInstance) {
    businessPageRoutes(app, deps);
    liveAccessRoutes(app, deps);
  };
}

/** The businesses, one business's page, and its settings changed. */
function businessPageRoutes(app: FastifyInstance, deps: Deps): void {
  app.get('/businesses', async (request, reply) => {
    const session = allowed(request, 'businesses.read');
    const rows = await repo.listBusinesses(deps.db, 500);
    const body = table(
      'Businesses',
      [
        { label: 'Business', cell: (r) => html`<a href="/ops/businesses/${r.id}">${r.name}</a>` },
        { label: 'Id', cell: (r) => html`<code class="id">${r.id}</code>` },
        { label: 'Live API', cell: (r) => (r.live_frozen_at ? badge('frozen') : badge('open')) },
        { label: 'Since', cell: (r) => when(r.created_at.toISOString()) },
      ],
      rows,
      'No business yet.',
    );
    return sendPage(reply, opsPage(session, 'businesses', 'Businesses', body));
  });

  app.get('/businesses/:id', async (request, reply) => {
    const session = allowed(request, 'businesses.read');
    return businessPage(deps, reply, session, uuidParam((request.params as { id: string }).id));
  });

  app.post('/businesses/:id/settings', async (request, reply) => {
    const session = allowed(request, 'businesses.edit');
    const id = uuidParam((request.params as { id: string }).id);
    const form = formOf(request);
    const key = form.get('key') ?? '';
    const reason = (form.get('reason') ?? '').trim().slice(0, 500);
    const parsed = parseSettingValue(key, form.get('value') ?? '');
    if (!parsed.ok) return businessPage(deps, reply, session, id, alert('error', parsed.message), 400);
    if (!reason) return businessPage(deps, reply, session, id, alert('error', 'Say why the setting changes.'), 400);
    try {
      await deps.inTransaction(async (trx) => {
        if (!(await repo.findBusiness(trx, id))) throw notFound('Business');
        await setSettings(trx, id, { [key]: parsed.value });
        await audit(trx, session, {
          action: 'business.setting_changed',
          targetType: 'business',
          targetId: id,
          tenantId: id,
          reason,
          detail: { key, value: parsed.value ?? null },
        });
      });
    } catch (err) {
      if (err instanceof InvalidSettings) return businessPage(deps, reply, session, id, alert('error', err.message), 400);
      throw err;
    }
    return seeOther(reply, `/ops/businesses/${id}`);
  });
}

/** The business's live API access frozen or lifted. */
function liveAccessRoutes(app: FastifyInstance, deps: Deps): void {
  for (const action of ['freeze', 'unfreeze'] as const) {
    app.post(`/businesses/:id/${action}`, async (request, reply) => {
      const session = allowed(request, 'businesses.edit');
      const id = uuidParam((request.params as { id: string }).id);
      const reason = (formOf(request).get('reason') ?? '').trim().slice(0, 500);
      if (!reason)
        return businessPage(
          deps,
          reply,
          session,
          id,
          alert('error', `Say why the live access is ${action === 'freeze' ? 'frozen' : 'lifted'}.`),
          400,
        );
      const changed = await deps.inTransaction(async (trx) => {
        if (!(await repo.findBusiness(trx, id))) throw notFound('Business');
        const done = await repo.setLiveFrozen(trx, id, action === 'freeze' ? { at: new Date(), reason } : null);
        if (done) {
          await audit(trx, session, {
            action: action === 'freeze' ? 'business.live_frozen' : 'business.live_unfrozen',
            targetType: 'business',
            targetId: id,
            tenantId: id,
            environment: 'live',
            reason,
          });
        }
        return done;
      });
      if (!changed) {
        const message = action === 'freeze' ? 'The live access was already frozen.' : 'The live access was not frozen.';
        return businessPage(deps, reply, session, id, alert('error', message), 409);
      }
      return seeOther(reply, `/ops/businesses/${id}`);
    });
  }
}

async function businessPage(deps: Deps, reply: FastifyReply, session: OpsSession, id: string, notice?: Html, status = 200) {
  const b = await repo.findBusiness(deps.db, id);
  if (!b) throw notFound('Business');
  const [keys, users, decisions] = await Promise.all([
    repo.activeKeyCounts(deps.db, id),
    repo.usersOf(deps.db, id),
    repo.listAudit(deps.db, { target: id, limit: 100 }),
  ]);
  const settings = b.settings as Record<string, unknown>;
  const keysIn = (env: string) =>
    keys
      .filter((k) => k.environment === env)
      .map((k) => `${k.n} ${k.kind}`)
      .join(', ') || 'none';
  const edit = opsCan(session.role, 'businesses.edit');
  const freeze = liveAccessSection(b, session, edit);
  const body = html`${facts([
    ['Id', html`<code class="id">${b.id}</code>`],
    ['Created', when(b.created_at.toISOString())],
    ['Sandbox keys in use', keysIn('sandbox')],
    ['Live keys in use', keysIn('live')],
  ])}
<h2>Live access</h2>
${freeze}
<h2>Settings</h2>
${table(
  'Settings',
  [
    { label: 'Setting', cell: (k) => html`<code>${k}</code>` },
    {
      label: 'Value',
      cell: (k) =>
        settings[k] === undefined ? html`<span class="empty">default</span>` : html`<code>${JSON.stringify(settings[k])}</code>`,
    },
  ],
  SETTING_KEYS,
  '',
)}
${settingsForm(b.id, session, edit)}
<h2>Dashboard users</h2>
${table(
  'Users',
  [
    { label: 'Email', cell: (u) => u.email },
    { label: 'Role', cell: (u) => u.role },
    { label: 'Since', cell: (u) => when(u.created_at.toISOString()) },
  ],
  users,
  'No dashboard users.',
)}
<h2>Decisions in the console</h2>
${decisionsTable('Decisions', decisions)}`;
  return sendPage(reply, opsPage(session, 'businesses', b.name, body, notice), status);
}

type Business = NonNullable<Awaited<ReturnType<typeof repo.findBusiness>>>;

/** Whether the live API is open or frozen, with the form that changes it. */
function liveAccessSection(b: Business, session: OpsSession, edit: boolean): Html {
  return b.live_frozen_at
    ? html`<p>${badge('frozen')} Live API access frozen since ${when(b.live_frozen_at.toISOString())}: ${b.live_frozen_reason}. Its live keys answer 403 <code>live_access_frozen</code>.</p>
${edit ? html`<form method="post" action="/ops/businesses/${b.id}/unfreeze" class="stack">${opsCsrf(session)}<div class="field"><label for="unfreeze-reason">Reason to lift</label><input id="unfreeze-reason" name="reason" required maxlength="500"></div><button type="submit">Lift the freeze</button></form>` : ''}`
    : html`<p>${badge('open')} Live API access open.</p>
${edit ? html`<form method="post" action="/ops/businesses/${b.id}/freeze" class="stack" data-confirm="Freeze this business's live API access? Its live keys stop working at once.">${opsCsrf(session)}<div class="field"><label for="freeze-reason">Reason to freeze</label><input id="freeze-reason" name="reason" required maxlength="500"></div><button type="submit">Freeze live API access</button></form>` : ''}`;
}

function settingsForm(id: string, session: OpsSession, edit: boolean): Html | '' {
  return edit
    ? html`<form method="post" action="/ops/businesses/${id}/settings" class="stack">${opsCsrf(session)}
  <div class="field"><label for="setting-key">Setting</label><select id="setting-key" name="key">${SETTING_KEYS.map((k) => html`<option value="${k}">${k}</option>`)}</select></div>
  <div class="field"><label for="setting-value">Value (JSON; empty resets to the default)</label><textarea id="setting-value" name="value" rows="4"></textarea></div>
  <div class="field"><label for="setting-reason">Reason</label><input id="setting-reason" name="reason" required maxlength="500"></div>
  <button type="submit">Save setting</button>
</form>`
    : '';
}
