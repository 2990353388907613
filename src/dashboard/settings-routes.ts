import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from '../http/deps.js';
import { isRetentionDays, RETENTION_MAX_DAYS, RETENTION_MIN_DAYS, RETENTION_SETTING } from '../modules/request-log/service.js';
import { InvalidSettings, setSettings, settingsOf } from '../modules/tenants/service.js';
import { html, type Html } from './html.js';
import { alert, appPage, csrfField, facts } from './layout.js';
import { formOf, seeOther, sendPage, sessionOf } from './replies.js';
import { can, requirePermission } from './roles.js';
import type { Session } from './service.js';
import type { TeamService } from './team-service.js';

interface SettingsView {
  /** The business's own retention, or null for the configured default. */
  own: number | null;
  defaultDays: number;
}

function settingsPage(session: Session, view: SettingsView, notice?: Html, status?: string): Html {
  const effective = view.own ?? view.defaultDays;
  const manage = can(session.role, 'settings');
  const form = manage
    ? html`<form method="post" action="/dashboard/settings/request-log" class="inline">${csrfField(session)}
  <label for="retention-days">Keep requests for (days, ${RETENTION_MIN_DAYS}–${RETENTION_MAX_DAYS})</label>
  <input id="retention-days" name="retention_days" type="number" inputmode="numeric" min="${RETENTION_MIN_DAYS}" max="${RETENTION_MAX_DAYS}" step="1" required value="${status ?? String(effective)}">
  <button type="submit" class="primary">Save</button>
</form>
${
  view.own === null
    ? ''
    : html`<form method="post" action="/dashboard/settings/request-log" class="inline">${csrfField(session)}
  <input type="hidden" name="retention_days" value="default">
  <button type="submit">Use the default (${view.defaultDays} days)</button>
</form>`
}`
    : html`<p>Only owners and admins change settings.</p>`;
  return appPage(
    session,
    'settings',
    'Settings',
    html`<section class="card" aria-labelledby="retention-title"><h2 id="retention-title">Request log retention</h2>
${facts([
  ['Kept for', `${effective} days`],
  ['Source', view.own === null ? `the server default (${view.defaultDays} days)` : 'this business’s setting'],
])}
<p>Requests older than this are deleted from the request log, in sandbox and live. The setting applies to the whole business.</p>
${form}
</section>`,
    notice,
  );
}

/** The business's dashboard settings (owners and admins change them; everyone reads them). */
export function settingsRoutes(deps: Deps, team: TeamService) {
  const defaultDays = deps.config.REQUEST_LOG_RETENTION_DAYS;
  const viewOf = async (session: Session): Promise<SettingsView> => {
    const own = (await settingsOf(deps.db, session.tenantId))[RETENTION_SETTING];
    return { own: own ?? null, defaultDays };
  };
  return async function plugin(app: FastifyInstance) {
    const render = async (request: FastifyRequest, reply: FastifyReply, notice?: Html, status = 200, value?: string) => {
      const session = sessionOf(request);
      return sendPage(reply, settingsPage(session, await viewOf(session), notice, value), status);
    };

    app.get('/settings', async (request, reply) => render(request, reply));

    app.post('/settings/request-log', async (request, reply) => {
      const session = sessionOf(request);
      requirePermission(session.role, 'settings');
      const raw = (formOf(request).get('retention_days') ?? '').trim();
      let days: number | undefined;
      if (raw !== 'default') {
        days = /^\d{1,3}$/.test(raw) ? Number(raw) : NaN;
        if (!isRetentionDays(days)) {
          const message = `Choose a whole number of days from ${RETENTION_MIN_DAYS} to ${RETENTION_MAX_DAYS}.`;
          return render(request, reply, alert('error', message), 400, raw.slice(0, 10));
        }
      }
      const before = (await viewOf(session)).own;
      // An undefined value drops the key: the business falls back to the server's default.
      try {
        await setSettings(deps.db, session.tenantId, { [RETENTION_SETTING]: days });
      } catch (err) {
        if (!(err instanceof InvalidSettings)) throw err;
        return render(request, reply, alert('error', `${err.message}. Ask the operator to correct them.`), 400);
      }
      await team.audit(
        session,
        'settings.request_log_retention',
        null,
        `${before === null ? 'default' : `${before} days`} → ${days === undefined ? `default (${defaultDays} days)` : `${days} days`}`,
      );
      return seeOther(reply, '/dashboard/settings');
    });
  };
}
