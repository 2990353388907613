import type { FastifyReply } from 'fastify';
import { AppError, notFound } from '../core/errors.js';
import type { Deps } from '../http/deps.js';
import { html, queryString, type Html } from '../dashboard/html.js';
import { badge, facts, table, when } from '../dashboard/layout.js';
import { formatAmount } from '../lib/money.js';
import * as bank from '../modules/bank-files/service.js';
import { decisionsTable, opsCsrf, opsPage } from './layout.js';
import * as repo from './repo.js';
import { opsCan } from './roles.js';
import { sendPage } from './replies.js';
import type { OpsSession } from './service.js';

const EXCEPTION_STATUSES = ['open', 'assigned', 'returned'] as const;
type ExceptionStatus = (typeof EXCEPTION_STATUSES)[number];

export const notFoundPage = (err: unknown): never => {
  throw err instanceof AppError && err.code === 'not_found' ? notFound('Page') : err;
};

/** The connections and the latest files both ways. */
export async function bankHomePage(deps: Deps, session: OpsSession): Promise<Html> {
  const [connections, files] = await Promise.all([bank.listConnections(deps.db), bank.listFiles(deps.db, undefined, 100)]);
  const names = new Map(connections.map((c) => [c.id, c.name]));
  const body = html`<h2>Connections</h2>
${table(
  'Bank connections',
  [
    { label: 'Name', cell: (c) => html`<a href="/ops/bank/connections/${c.id}">${c.name}</a>` },
    { label: 'Environment', cell: (c) => badge(c.environment) },
    { label: 'Currency', cell: (c) => c.currency },
    { label: 'Account', cell: (c) => c.iban ?? c.account_number },
    { label: 'Transport', cell: (c) => c.transport.type },
    { label: 'Status', cell: (c) => badge(c.status) },
  ],
  connections,
  'No bank connection yet (add one with the CLI or the operator API).',
)}
<h2>Files sent and received <small>(newest first)</small></h2>
${fileTable(files, names)}`;
  return opsPage(session, 'bank', 'Bank files', body);
}

type BankFile = Awaited<ReturnType<typeof bank.getFile>>;

/** One file: its facts, the payouts and entries it carried, and its XML. */
export async function filePage(deps: Deps, session: OpsSession, file: BankFile): Promise<Html> {
  const [connection, entries] = await Promise.all([
    bank.getConnection(deps.db, file.connection_id),
    repo.bankEntriesOfFile(deps.db, file.id),
  ]);
  const body = html`${facts([
    ['File', file.filename],
    ['Connection', html`<a href="/ops/bank/connections/${connection.id}">${connection.name}</a>`],
    ['Direction', file.direction === 'out' ? 'sent to the bank' : 'received from the bank'],
    ['Kind', html`<code>${file.kind}</code>`],
    ['Message id', html`<code>${file.message_id}</code>`],
    ['Status', badge(file.status)],
    [file.direction === 'out' ? 'Cut' : 'Imported', when(file.created_at)],
    ['Delivered', when(file.delivered_at)],
    ['Size', `${file.size} bytes`],
    ['Checksum (SHA-256)', html`<code>${file.checksum}</code>`],
    ['Summary', html`<code>${JSON.stringify(file.summary)}</code>`],
  ])}
${filePayouts(file)}
${fileEntries(entries)}
<h2>Content</h2>
${
  file.content === null
    ? html`<p class="empty">The content is not kept.</p>`
    : html`<p><a href="/ops/bank/files/${file.id}/download" download="${file.filename}">Download ${file.filename}</a></p>
<pre class="xml"><code>${file.content}</code></pre>`
}`;
  return opsPage(session, 'bank', `Bank file ${file.filename}`, body);
}

function filePayouts(file: BankFile): Html | '' {
  return file.payouts.length
    ? html`<h2>Payouts in this file</h2>${table(
        'Payouts',
        [
          { label: 'Payout', cell: (p) => html`<a href="/ops/payouts/${p.transfer_id}"><code class="id">${p.transfer_id}</code></a>` },
          { label: 'End-to-end id', cell: (p) => html`<code>${p.end_to_end_id}</code>` },
          { label: 'Amount', cell: (p) => `${p.amount} ${p.currency}`, numeric: true },
          { label: 'Bank status', cell: (p) => badge(p.status) },
          { label: 'Reason', cell: (p) => p.reason },
        ],
        file.payouts,
        '',
      )}`
    : '';
}

function fileEntries(entries: Awaited<ReturnType<typeof repo.bankEntriesOfFile>>): Html | '' {
  return entries.length
    ? html`<h2>Entries</h2>${table(
        'Entries',
        [
          { label: 'Bank reference', cell: (e) => html`<code>${e.entry_key}</code>` },
          { label: 'Direction', cell: (e) => e.direction },
          { label: 'Amount', cell: (e) => `${formatAmount(e.amount, e.currency)} ${e.currency}`, numeric: true },
          { label: 'Booked', cell: (e) => e.booking_date },
          { label: 'Outcome', cell: (e) => badge(e.outcome) },
          { label: 'Account', cell: (e) => (e.account_id ? html`<code class="id">${e.account_id}</code>` : null) },
          {
            label: 'Payout',
            cell: (e) =>
              e.transfer_id ? html`<a href="/ops/payouts/${e.transfer_id}"><code class="id">${e.transfer_id}</code></a>` : null,
          },
        ],
        entries,
        '',
      )}`
    : '';
}

/** A connection: its details, the exchange form, its files, reconciliations and console exchanges. */
export async function connectionPage(deps: Deps, reply: FastifyReply, session: OpsSession, id: string, notice?: Html, status = 200) {
  const c = await bank.getConnection(deps.db, id).catch(notFoundPage);
  const [files, recs, open, decisions] = await Promise.all([
    bank.listFiles(deps.db, c.id, 50),
    bank.listReconciliations(deps.db, c.id, 20),
    bank.listExceptions(deps.db, { connectionId: c.id, status: 'open' }),
    repo.listAudit(deps.db, { target: c.id, limit: 50 }),
  ]);
  const names = new Map([[c.id, c.name]]);
  const t = c.transport;
  const body = html`${facts([
    ['Connection', html`<code class="id">${c.id}</code>`],
    ['Environment', badge(c.environment)],
    ['Status', badge(c.status)],
    ['Account name', c.account_name],
    ['IBAN', c.iban],
    ['Account number', c.account_number],
    ['BIC', c.bic],
    ['Bank code', c.bank_code],
    ['Currency', c.currency],
    ['Rails', c.rails.join(', ')],
    [
      'Transport',
      t.type === 'sftp'
        ? `SFTP ${t.username ?? ''}@${t.host ?? ''}:${t.port ?? 22} (out ${t.remote_outbox ?? '—'}, in ${t.remote_inbox ?? '—'})`
        : `folder (out ${t.outbox ?? '—'}, in ${t.inbox ?? '—'})`,
    ],
    ['Open exceptions', html`<a href="/ops/bank/exceptions?status=open">${open.length}</a>`],
  ])}
${
  opsCan(session.role, 'bank.act')
    ? html`<h2>Cut and exchange now</h2>
<form method="post" action="/ops/bank/connections/${c.id}/exchange" class="stack" data-confirm="Cut a file of the waiting payouts, deliver it and import what the bank left, now?">${opsCsrf(session)}
  <div class="field"><label for="exchange-reason">Reason</label><input id="exchange-reason" name="reason" maxlength="500" required></div>
  <button type="submit">Cut and exchange now</button>
</form>`
    : ''
}
<h2>Files</h2>
${fileTable(files, names)}
<h2>Reconciliations</h2>
${reconciliationTable(recs, names)}
<h2>Exchanges run from the console</h2>
${decisionsTable('Exchanges', decisions, 'None yet.')}`;
  return sendPage(reply, opsPage(session, 'bank', `Bank connection ${c.name}`, body, notice), status);
}

/** The exceptions queue, by status, with the assign and return forms. */
export async function exceptionsPage(deps: Deps, reply: FastifyReply, session: OpsSession, wanted: string, notice?: Html, status = 200) {
  const filter = (EXCEPTION_STATUSES as readonly string[]).includes(wanted) ? (wanted as ExceptionStatus) : undefined;
  const [rows, connections] = await Promise.all([bank.listExceptions(deps.db, { status: filter }, 200), bank.listConnections(deps.db)]);
  const names = new Map(connections.map((c) => [c.id, c.name]));
  const act = opsCan(session.role, 'bank.act');
  const forms = (e: bank.ExceptionResponse) => (e.status !== 'open' || !act ? null : exceptionForms(e, session));
  const body = html`<p>Money the bank moved that matched no account or payout. Assign a credit to the account it belongs to
(the account is credited at once), or record that it was returned to the sender.</p>
<p>${EXCEPTION_STATUSES.map((s) => html`<a href="/ops/bank/exceptions?status=${s}"${s === filter ? html` aria-current="true"` : ''}>${s}</a> · `)}<a href="/ops/bank/exceptions${queryString({ status: 'all' })}">all</a></p>
${table(
  'Exceptions',
  [
    { label: 'Received', cell: (e) => when(e.created_at) },
    {
      label: 'Connection',
      cell: (e) => html`<a href="/ops/bank/connections/${e.connection_id}">${names.get(e.connection_id) ?? e.connection_id}</a>`,
    },
    { label: 'Direction', cell: (e) => e.direction },
    { label: 'Amount', cell: (e) => `${e.amount} ${e.currency}`, numeric: true },
    { label: 'Payer', cell: (e) => e.payer_name },
    { label: 'Account named', cell: (e) => e.creditor_account },
    { label: 'Reference', cell: (e) => e.reference },
    { label: 'Why unmatched', cell: (e) => e.reason },
    { label: 'Status', cell: (e) => badge(e.status) },
    {
      label: 'Resolution',
      cell: (e) =>
        e.status === 'open'
          ? forms(e)
          : html`${e.account_id ? html`<code class="id">${e.account_id}</code> ` : ''}${e.resolved_note ?? ''} ${when(e.resolved_at)}`,
    },
  ],
  rows,
  filter === 'open' ? 'No open exception: every entry matched.' : 'None.',
)}`;
  return sendPage(reply, opsPage(session, 'bank/exceptions', 'Bank exceptions', body, notice), status);
}

/** Assign a credit to an account, or record the money returned to the sender. */
function exceptionForms(e: bank.ExceptionResponse, session: OpsSession): Html {
  return html`${
    e.direction === 'credit'
      ? html`<form method="post" action="/ops/bank/exceptions/${e.id}/assign" class="stack">${opsCsrf(session)}
  <div class="field"><label for="acc-${e.id}">Account id</label><input id="acc-${e.id}" name="account_id" required maxlength="36"></div>
  <div class="field"><label for="why-a-${e.id}">Reason</label><input id="why-a-${e.id}" name="reason" required maxlength="500"></div>
  <button type="submit">Assign</button>
</form>`
      : ''
  }<form method="post" action="/ops/bank/exceptions/${e.id}/return" class="stack" data-confirm="Mark this money as returned to the sender?">${opsCsrf(session)}
  <div class="field"><label for="why-r-${e.id}">Reason</label><input id="why-r-${e.id}" name="reason" required maxlength="500"></div>
  <button type="submit">Returned to sender</button>
</form>`;
}

function fileTable(files: Awaited<ReturnType<typeof bank.listFiles>>, names: Map<string, string>): Html {
  return table(
    'Bank files',
    [
      { label: 'When', cell: (f) => when(f.created_at) },
      { label: 'File', cell: (f) => html`<a href="/ops/bank/files/${f.id}">${f.filename}</a>` },
      { label: 'Connection', cell: (f) => names.get(f.connection_id) ?? f.connection_id },
      { label: 'Direction', cell: (f) => (f.direction === 'out' ? 'sent' : 'received') },
      { label: 'Kind', cell: (f) => html`<code>${f.kind}</code>` },
      { label: 'Message id', cell: (f) => html`<code>${f.message_id}</code>` },
      { label: 'Status', cell: (f) => badge(f.status) },
      { label: 'Delivered', cell: (f) => when(f.delivered_at) },
    ],
    files,
    'No file yet.',
  );
}

function reconciliationTable(recs: bank.ReconciliationResponse[], names: Map<string, string>): Html {
  return table(
    'Reconciliations',
    [
      { label: 'Statement date', cell: (r) => r.statement_date },
      { label: 'Connection', cell: (r) => names.get(r.connection_id) ?? r.connection_id },
      { label: 'Statement', cell: (r) => html`<a href="/ops/bank/files/${r.file_id}"><code>${r.statement_id}</code></a>` },
      { label: 'Bank closing balance', cell: (r) => `${r.bank_balance} ${r.currency}`, numeric: true },
      { label: 'Ledger', cell: (r) => `${r.ledger_balance} ${r.currency}`, numeric: true },
      { label: 'Difference', cell: (r) => `${r.difference} ${r.currency}`, numeric: true },
      { label: 'Result', cell: (r) => badge(r.status) },
      {
        label: 'Explained by',
        cell: (r) =>
          r.explanation.length
            ? html`<ul>${(r.explanation as Record<string, string>[]).map((x) =>
                x.exception_id
                  ? html`<li>open exception ${x.direction} ${x.amount} (${x.reason}${x.reference ? `, ${x.reference}` : ''})</li>`
                  : html`<li>unexplained ${x.unexplained}</li>`,
              )}</ul>`
            : null,
      },
    ],
    recs,
    'No statement reconciled yet.',
  );
}

/** Each statement's closing balance against the ledger. */
export async function reconciliationsPage(deps: Deps, session: OpsSession): Promise<Html> {
  const [recs, connections] = await Promise.all([bank.listReconciliations(deps.db), bank.listConnections(deps.db)]);
  const names = new Map(connections.map((c) => [c.id, c.name]));
  const body = html`<p>Each camt.053 statement's closing balance against the ledger (the settlement accounts of the connection's
environment and currency at the end of the statement's date). A break lists the open exceptions that explain it and what is left.</p>
${reconciliationTable(recs, names)}`;
  return opsPage(session, 'bank/reconciliations', 'Reconciliation', body);
}
