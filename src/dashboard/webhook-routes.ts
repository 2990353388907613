import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { webhookLoopbackAllowed } from '../config.js';
import type { Deps } from '../http/deps.js';
import { AppError, notFound } from '../core/errors.js';
import { mustChoose } from './errors.js';
import { statusOf } from '../http/errors.js';
import { isUuid } from '../lib/ids.js';
import { AttemptsQuery, HistoryQuery, MAX_OVERLAP_SECONDS, ReplayBody } from '../modules/webhooks/schema.js';
import * as webhooks from '../modules/webhooks/service.js';
import { EVENT_TYPES, type EventType } from '../modules/webhooks/service.js';
import type { Html } from './html.js';
import { alert } from './layout.js';
import { requirePermission } from './roles.js';
import { formOf, seeOther, sendPage, sessionOf } from './replies.js';
import type { DashboardService, Flash, Session } from './service.js';
import type { TeamService } from './team-service.js';
import { deliveryPage, endpointPage, webhooksPage } from './webhook-pages.js';

const FILTERS = ['status', 'event_type', 'from', 'to', 'page'] as const;

function idParam(request: FastifyRequest): string {
  const id = (request.params as { id?: string }).id ?? '';
  if (!isUuid(id)) throw notFound('Page');
  return id;
}

function eventTypesOf(form: URLSearchParams): EventType[] {
  const known = new Set<string>(EVENT_TYPES);
  return form.getAll('event_types').filter((t): t is EventType => known.has(t));
}

/** A client's mistake (bad URL, limit reached, disabled endpoint) shown on the page, not as an error page. */
function isUserError(err: unknown): err is AppError {
  return err instanceof AppError && statusOf(err) >= 400 && statusOf(err) < 500 && statusOf(err) !== 404;
}

function userMessage(err: AppError): string {
  return [err.message, ...err.details.map((d) => d.message)].filter((m, i, all) => all.indexOf(m) === i).join('. ');
}

/** What the route groups share: the dependencies, the dashboard's services and the URL rules. */
interface WebhookContext {
  deps: Deps;
  service: DashboardService;
  team: TeamService;
  urlRules: { allowLoopback: boolean };
}

type Extra = { notice?: Html; status?: number; form?: { url: string; event_types: string[] }; flash?: Flash | null };

const scopeOf = (s: Session) => ({ tenantId: s.tenantId, environment: s.environment });

/** The webhooks page: endpoint management, delivery history and resend, via the webhooks service. */
export function webhookRoutes(deps: Deps, service: DashboardService, team: TeamService) {
  const ctx: WebhookContext = { deps, service, team, urlRules: { allowLoopback: webhookLoopbackAllowed(deps.config) } };
  return async function plugin(app: FastifyInstance) {
    listPages(app, ctx);
    endpointPages(app, ctx);
    deliveryPages(app, ctx);
    sendingRoutes(app, ctx);
  };
}

/** The webhooks page with the history filtered by the query; a bad filter shows as a notice, not a 400. */
async function render({ deps, service }: WebhookContext, request: FastifyRequest, reply: FastifyReply, extra: Extra = {}) {
  const session = sessionOf(request);
  const query = (request.query ?? {}) as Record<string, unknown>;
  const filters: Record<string, string | undefined> = {};
  for (const name of FILTERS) if (typeof query[name] === 'string' && query[name] !== '') filters[name] = query[name] as string;
  const endpoints = await webhooks.listEndpoints(deps.db, scopeOf(session), { page: 1, items_per_page: 20 });
  const parsed = HistoryQuery.safeParse({ ...filters, items_per_page: '20' });
  let notice = extra.notice;
  const deliveries = parsed.success ? await webhooks.listDeliveries(deps.db, scopeOf(session), parsed.data) : null;
  if (!parsed.success)
    notice = alert('error', `Invalid filter: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  const flash = extra.flash === undefined ? await service.takeFlash(session) : extra.flash;
  const page = webhooksPage(session, { endpoints: endpoints.items, deliveries, filters, flash, notice, form: extra.form });
  return sendPage(reply, page, extra.status ?? 200);
}

/**
 * Runs a form action of a role that may manage webhooks, and records it in the audit log; a
 * client mistake re-renders the page with the message (status 4xx).
 */
async function act(
  ctx: WebhookContext,
  request: FastifyRequest,
  reply: FastifyReply,
  action: string,
  work: (s: Session, form: URLSearchParams) => Promise<string>,
) {
  const form = formOf(request);
  const session = sessionOf(request);
  requirePermission(session.role, 'webhooks');
  try {
    const next = await work(session, form);
    await ctx.team.audit(session, action, (request.params as { id?: string }).id ?? (form.get('url') || null));
    return seeOther(reply, next);
  } catch (err) {
    if (!isUserError(err)) throw err;
    const formState = { url: form.get('url') ?? '', event_types: eventTypesOf(form) };
    return render(ctx, request, reply, { notice: alert('error', userMessage(err)), status: statusOf(err), form: formState, flash: null });
  }
}

/** The list page and adding an endpoint (its secret is shown once, through the flash). */
function listPages(app: FastifyInstance, ctx: WebhookContext) {
  const { deps, service, urlRules } = ctx;
  app.get('/webhooks', async (request, reply) => render(ctx, request, reply));

  app.post('/webhooks', async (request, reply) =>
    act(ctx, request, reply, 'webhook.endpoint_created', async (session, form) => {
      const created = await webhooks.createEndpoint(
        deps.db,
        scopeOf(session),
        deps.sealer,
        {
          url: (form.get('url') ?? '').trim(),
          event_types: eventTypesOf(form),
        },
        urlRules,
      );
      await service.setFlash(session, { kind: 'webhook_secret', endpoint_id: created.id, secret: created.secret });
      return '/dashboard/webhooks';
    }),
  );
}

/** One endpoint's page and its settings: URL and events, status, secret rotation, deletion. */
function endpointPages(app: FastifyInstance, ctx: WebhookContext) {
  const { deps, service, urlRules } = ctx;
  app.get('/webhooks/endpoints/:id', async (request, reply) => {
    const session = sessionOf(request);
    return sendPage(reply, endpointPage(session, await webhooks.getEndpoint(deps.db, scopeOf(session), idParam(request))));
  });

  app.post('/webhooks/endpoints/:id', async (request, reply) =>
    act(ctx, request, reply, 'webhook.endpoint_updated', async (session, form) => {
      const id = idParam(request);
      await webhooks.updateEndpoint(
        deps.db,
        scopeOf(session),
        id,
        { url: (form.get('url') ?? '').trim(), event_types: eventTypesOf(form) },
        urlRules,
      );
      return '/dashboard/webhooks';
    }),
  );

  app.post('/webhooks/endpoints/:id/status', async (request, reply) =>
    act(ctx, request, reply, 'webhook.endpoint_status', async (session, form) => {
      const status = form.get('status');
      if (status !== 'enabled' && status !== 'disabled') throw mustChoose('enabled or disabled');
      await webhooks.updateEndpoint(deps.db, scopeOf(session), idParam(request), { status }, urlRules);
      return '/dashboard/webhooks';
    }),
  );

  app.post('/webhooks/endpoints/:id/rotate', async (request, reply) =>
    act(ctx, request, reply, 'webhook.secret_rotated', async (session, form) => {
      const seconds = Number(form.get('expire_old_in_seconds') ?? '86400');
      if (!Number.isInteger(seconds) || seconds < 0 || seconds > MAX_OVERLAP_SECONDS) {
        throw mustChoose('when the old secret stops signing');
      }
      const rotated = await deps.inTransaction((trx) =>
        webhooks.rotateSecret(trx, scopeOf(session), deps.sealer, idParam(request), { expire_old_in_seconds: seconds }),
      );
      await service.setFlash(session, { kind: 'webhook_secret', endpoint_id: rotated.id, secret: rotated.secret });
      return '/dashboard/webhooks';
    }),
  );

  app.post('/webhooks/endpoints/:id/delete', async (request, reply) =>
    act(ctx, request, reply, 'webhook.endpoint_deleted', async (session) => {
      await deps.inTransaction((trx) => webhooks.deleteEndpoint(trx, scopeOf(session), idParam(request)));
      return '/dashboard/webhooks';
    }),
  );
}

/** One delivery's page with its attempts, and sending it again. */
function deliveryPages(app: FastifyInstance, ctx: WebhookContext) {
  const { deps } = ctx;
  app.get('/webhooks/deliveries/:id', async (request, reply) => {
    const session = sessionOf(request);
    const id = idParam(request);
    const page = Number((request.query as { page?: string }).page ?? '1');
    const query = AttemptsQuery.safeParse({ page: Number.isInteger(page) && page > 0 ? String(page) : '1', items_per_page: '20' });
    const detail = await webhooks.getDelivery(deps.db, scopeOf(session), id);
    const attempts = await webhooks.listAttempts(deps.db, scopeOf(session), id, query.success ? query.data : { page: 1 });
    return sendPage(reply, deliveryPage(session, detail, attempts));
  });

  app.post('/webhooks/deliveries/:id/resend', async (request, reply) =>
    act(ctx, request, reply, 'webhook.resent', async (session, form) => {
      await webhooks.resend(deps.db, scopeOf(session), idParam(request));
      // Back to the page the button was on (an event's page), else the webhooks page.
      const back = form.get('back') ?? '';
      return /^\/dashboard\/events\/[0-9a-f-]{36}$/.test(back) ? back : '/dashboard/webhooks';
    }),
  );
}

/** datetime-local sends no zone and maybe no seconds: read it as UTC. */
function utc(v: string | null) {
  return v && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(v) ? `${v.length === 16 ? `${v}:00` : v}Z` : v;
}

/** Sending events to an endpoint on request: a replay of past events, or a test event. */
function sendingRoutes(app: FastifyInstance, ctx: WebhookContext) {
  const { deps } = ctx;
  app.post('/webhooks/endpoints/:id/replay', async (request, reply) =>
    act(ctx, request, reply, 'webhook.replayed', async (session, form) => {
      const parsed = ReplayBody.safeParse({
        from: utc(form.get('from')) ?? '',
        ...(form.get('to') ? { to: utc(form.get('to')) } : {}),
        scope: form.get('scope') ?? 'failed',
      });
      if (!parsed.success) throw mustChoose('a start (and an end after it)');
      const id = idParam(request);
      await deps.inTransaction((trx) => webhooks.replay(trx, scopeOf(session), id, parsed.data));
      return `/dashboard/webhooks/endpoints/${id}`;
    }),
  );

  app.post('/webhooks/endpoints/:id/test', async (request, reply) =>
    act(ctx, request, reply, 'webhook.test_sent', async (session) => {
      const sent = await deps.inTransaction((trx) => webhooks.sendTestEvent(trx, scopeOf(session), idParam(request)));
      return `/dashboard/events/${sent.event_id}`;
    }),
  );
}
