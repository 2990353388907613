import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Environment } from '../core/context.js';
import { AppError, notFound } from '../core/errors.js';
import type { Deps } from '../http/deps.js';
import { html, queryString, type Html } from '../dashboard/html.js';
import { alert, badge, facts, table, when } from '../dashboard/layout.js';
import { formatAmount } from '../lib/money.js';
import { operatorOutcome } from '../modules/transfers/payout-operator.js';
import { age, decisionsTable, opsCsrf, opsPage } from './layout.js';
import * as repo from './repo.js';
import { opsCan } from './roles.js';
import { allowed, formOf, sendPage, seeOther, uuidParam } from './replies.js';
import { audit, type OpsSession } from './service.js';

const STATUSES = ['pending', 'processing', 'completed', 'failed', 'returned'] as const;
/** The hand-recorded outcomes: the CLI's `payouts settle|fail|return`. */
const OUTCOMES = { settle: 'settled', fail: 'failed', return: 'returned' } as const;

const money = (minor: bigint, currency: string) => `${formatAmount(minor, currency)} ${currency}`;

export function payoutRoutes(deps: Deps) {
  return async function plugin(app: FastifyInstance) {
    payoutPageRoutes(app, deps);
    outcomeRoutes(app, deps);
  };
}

/** The live payouts by state, and one payout's page. */
function payoutPageRoutes(app: FastifyInstance, deps: Deps): void {
  app.get('/payouts', async (request, reply) => {
    const session = allowed(request, 'payouts.read');
    const q = request.query as Record<string, string | undefined>;
    const status = (STATUSES as readonly string[]).includes(q.status ?? '') ? q.status : undefined;
    const [rows, counts] = await Promise.all([
      repo.listPayouts(deps.db, { environment: 'live', status, limit: 200 }),
      repo.countPayoutsByStatus(deps.db, 'live'),
    ]);
    const summary = table(
      'Live payouts by state',
      [
        { label: 'State', cell: (r) => html`<a href="/ops/payouts${queryString({ status: r.status })}">${r.status}</a>` },
        { label: 'Payouts', cell: (r) => r.n, numeric: true },
        { label: 'Oldest', cell: (r) => age(new Date(r.oldest)) },
      ],
      counts,
      'No live payouts yet.',
    );
    const body = html`${summary}
<h2>${status ? `${status[0]!.toUpperCase()}${status.slice(1)} payouts` : 'Every live payout'} <small>(oldest first)</small></h2>
<p>${STATUSES.map((s) => html`<a href="/ops/payouts?status=${s}"${s === status ? html` aria-current="true"` : ''}>${s}</a> · `)}<a href="/ops/payouts">all</a></p>
${table(
  'Live payouts',
  [
    { label: 'Age', cell: (r) => age(r.created_at) },
    { label: 'Transfer', cell: (r) => html`<a href="/ops/payouts/${r.id}"><code class="id">${r.id}</code></a>` },
    { label: 'Business', cell: (r) => r.tenant_name },
    { label: 'Status', cell: (r) => badge(r.status) },
    { label: 'Rail', cell: (r) => `${r.rail ?? '—'}${r.connector ? ` (${r.connector}: ${r.rail_state})` : ''}` },
    { label: 'Amount', cell: (r) => money(r.amount, r.currency), numeric: true },
  ],
  rows,
  'No payout in this state.',
)}`;
    return sendPage(reply, opsPage(session, 'payouts', 'Live payouts', body));
  });

  app.get('/payouts/:id', async (request, reply) => {
    const session = allowed(request, 'payouts.read');
    return payoutPage(deps, reply, session, uuidParam((request.params as { id: string }).id));
  });
}

/** The bank's answer recorded by hand (the CLI's `payouts settle|fail|return`). */
function outcomeRoutes(app: FastifyInstance, deps: Deps): void {
  for (const [action, outcome] of Object.entries(OUTCOMES)) {
    app.post(`/payouts/:id/${action}`, async (request, reply) => {
      const session = allowed(request, 'payouts.decide');
      const id = uuidParam((request.params as { id: string }).id);
      const reason = (formOf(request).get('reason') ?? '').trim().slice(0, 500);
      if (!reason) return payoutPage(deps, reply, session, id, alert('error', 'Give the reason (what the bank said, its reference).'), 400);
      try {
        await deps.inTransaction(async (trx) => {
          const transfer = await operatorOutcome(trx, id, outcome, reason, deps.config);
          const row = await repo.findTransferById(trx, id);
          await audit(trx, session, {
            action: `payout.${outcome}`,
            targetType: 'transfer',
            targetId: id,
            tenantId: row?.tenant_id ?? null,
            environment: row?.environment ?? null,
            reason,
            detail: { transfer_status: transfer.transfer_status },
          });
        });
      } catch (err) {
        if (
          err instanceof AppError &&
          (err.code === 'invalid_state_transition' || err.code === 'not_found' || err.code === 'validation_failed')
        ) {
          return payoutPage(deps, reply, session, id, alert('error', `Not recorded: ${err.message}`), err.code === 'not_found' ? 404 : 409);
        }
        throw err;
      }
      return seeOther(reply, `/ops/payouts/${id}`);
    });
  }
}

async function payoutPage(deps: Deps, reply: FastifyReply, session: OpsSession, id: string, notice?: Html, status = 200) {
  const t = await repo.findTransferById(deps.db, id);
  if (!t || t.destination_type !== 'external_account') throw notFound('Payout');
  const ctx = { tenantId: t.tenant_id, environment: t.environment as Environment };
  const [business, rail, entries, events, decisions, bankFiles, bankEntries] = await Promise.all([
    repo.findBusiness(deps.db, t.tenant_id),
    repo.railPayoutOf(deps.db, ctx, t.id),
    repo.ledgerEntriesOf(deps.db, ctx, t),
    repo.eventsOf(deps.db, ctx, t.id),
    repo.listAudit(deps.db, { target: t.id, limit: 100 }),
    repo.bankFilesOfPayout(deps.db, t.id),
    repo.bankEntriesOfPayout(deps.db, t.id),
  ]);
  const can = opsCan(session.role, 'payouts.decide') && rail?.connector === 'manual';
  const body = html`${facts([
    ['Transfer', html`<code class="id">${t.id}</code>`],
    ['Business', business ? html`<a href="/ops/businesses/${business.id}">${business.name}</a>` : t.tenant_id],
    ['Environment', badge(t.environment)],
    ['Status', badge(t.status)],
    ['Amount', money(t.amount, t.currency)],
    ['Fee', money(t.fee, t.currency)],
    ['Rail', t.rail],
    ['Reference', t.id],
    ['Failure reason', t.failure_reason],
    ['Created', when(t.created_at.toISOString())],
    ['Age', age(t.created_at)],
  ])}
<h2>Rail record</h2>
${railFacts(rail)}
${bankSection(bankFiles, bankEntries)}
${can ? outcomeForms(t, session) : ''}
${ledgerSection(entries, events)}
<h2>Decisions in the console</h2>
${decisionsTable('Decisions', decisions)}`;
  return sendPage(reply, opsPage(session, 'payouts', 'Payout', body, notice), status);
}

type Payout = NonNullable<Awaited<ReturnType<typeof repo.findTransferById>>>;

function railFacts(rail: Awaited<ReturnType<typeof repo.railPayoutOf>>): Html {
  return rail
    ? facts([
        ['Connector', rail.connector],
        ['State', badge(rail.state)],
        ['Rail', rail.rail],
        ['Amount', money(rail.amount, rail.currency)],
        ['Reason', rail.reason],
        ['Payee', html`<code>${JSON.stringify(rail.payee)}</code>`],
        ['Submitted', when(rail.created_at.toISOString())],
        ['Updated', when(rail.updated_at.toISOString())],
      ])
    : html`<p class="empty">Not submitted to a rail yet.</p>`;
}

/** The bank files that carried the payout and the statement entries about it. */
function bankSection(
  bankFiles: Awaited<ReturnType<typeof repo.bankFilesOfPayout>>,
  bankEntries: Awaited<ReturnType<typeof repo.bankEntriesOfPayout>>,
): Html | '' {
  return bankFiles.length || bankEntries.length
    ? html`<h2>Bank files</h2>
${table(
  'Bank files of this payout',
  [
    { label: 'File', cell: (r) => html`<a href="/ops/bank/files/${r.file_id}">${r.filename}</a>` },
    { label: 'Message id', cell: (r) => html`<code>${r.message_id}</code>` },
    { label: 'End-to-end id', cell: (r) => html`<code>${r.end_to_end_id}</code>` },
    { label: 'File status', cell: (r) => badge(r.file_status) },
    { label: 'Delivered', cell: (r) => when(r.delivered_at?.toISOString() ?? null) },
    { label: 'Bank status (pain.002 / camt)', cell: (r) => badge(r.status) },
    { label: 'Reason', cell: (r) => r.reason },
    { label: 'Updated', cell: (r) => when(r.updated_at.toISOString()) },
  ],
  bankFiles,
  'In no bank file.',
)}
${table(
  'Bank entries about this payout',
  [
    { label: 'Reported in', cell: (r) => html`<a href="/ops/bank/files/${r.file_id}">${r.filename}</a> (${r.kind})` },
    { label: 'Bank reference', cell: (r) => html`<code>${r.entry_key}</code>` },
    { label: 'Direction', cell: (r) => r.direction },
    { label: 'Amount', cell: (r) => money(r.amount, r.currency), numeric: true },
    { label: 'Booked', cell: (r) => r.booking_date },
    { label: 'Outcome', cell: (r) => badge(r.outcome) },
  ],
  bankEntries,
  'No camt entry about it yet.',
)}`
    : '';
}

/** The outcomes the payout's status still allows, one form each. */
function outcomeForms(t: Payout, session: OpsSession): Html | '' {
  const actions = (list: (keyof typeof OUTCOMES)[]) =>
    list.map(
      (
        a,
      ) => html`<form method="post" action="/ops/payouts/${t.id}/${a}" class="stack" data-confirm="Record this payout as ${OUTCOMES[a]}? The business is told at once.">${opsCsrf(session)}
  <div class="field"><label for="reason-${a}">Reason for ${a}</label><input id="reason-${a}" name="reason" maxlength="500" required></div>
  <button type="submit">${a === 'settle' ? 'Settle' : a === 'fail' ? 'Fail' : 'Return'}</button>
</form>`,
    );
  const available: (keyof typeof OUTCOMES)[] =
    t.status === 'pending' || t.status === 'processing' ? ['settle', 'fail'] : t.status === 'completed' ? ['return'] : [];
  return available.length ? html`<h2>Record the bank's answer</h2>${actions(available)}` : '';
}

function ledgerSection(entries: Awaited<ReturnType<typeof repo.ledgerEntriesOf>>, events: Awaited<ReturnType<typeof repo.eventsOf>>): Html {
  return html`<h2>Ledger entries</h2>
${table(
  'Ledger entries',
  [
    { label: 'When', cell: (r) => when(r.created_at.toISOString()) },
    { label: 'Posting', cell: (r) => r.kind },
    { label: 'Account', cell: (r) => html`<code class="id">${r.account_id}</code>${r.system_role ? ` (${r.system_role})` : ''}` },
    { label: 'Amount', cell: (r) => money(r.amount, r.currency), numeric: true },
    { label: 'Balance after', cell: (r) => money(r.balance_after, r.currency), numeric: true },
  ],
  entries,
  'No ledger entries posted yet (a payout holds funds until it settles).',
)}
<h2>Events</h2>
${table(
  'Events',
  [
    { label: 'When', cell: (r) => when(r.created_at.toISOString()) },
    { label: 'Event', cell: (r) => html`<code>${r.event_type}</code>` },
  ],
  events,
  'No events.',
)}`;
}
