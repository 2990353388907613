import type { FastifyReply } from 'fastify';
import type { Environment } from '../core/context.js';
import { notFound } from '../core/errors.js';
import type { Deps } from '../http/deps.js';
import { html, queryString, type Html } from '../dashboard/html.js';
import { badge, facts, filterForm, table, when } from '../dashboard/layout.js';
import { age, decisionsTable, opsCsrf, opsPage } from './layout.js';
import * as repo from './repo.js';
import { opsCan } from './roles.js';
import { sendPage } from './replies.js';
import type { OpsSession } from './service.js';

/** Labels an operator can give a rejection (sent to the business in the event's rejectLabels). */
export const REJECT_LABELS = [
  'DOCUMENT_DAMAGED',
  'FORGERY',
  'SANCTIONS',
  'AGE_REQUIREMENT_MISMATCH',
  'DUPLICATE',
  'INCONSISTENT_PROFILE',
  'BAD_PHOTO',
  'OPERATOR_DECISION',
] as const;

/** Documents an operator can ask for again (a RETRY rejection the customer answers by uploading them). */
export const REQUESTABLE_DOCUMENTS = ['PASSPORT', 'ID_CARD', 'DRIVERS', 'SELFIE', 'PROOF_OF_ADDRESS', 'REGISTRATION_CERTIFICATE'] as const;

/** File types rendered in the page; anything else would be a download (never rendered). */
export const INLINE_TYPES = new Set(['image/png', 'image/jpeg', 'application/pdf']);

interface Check {
  check: string;
  subject: string;
  result: string;
  detail?: unknown;
}

function checkDetail(c: Check): Html | string {
  if (c.check === 'sanctions' && Array.isArray(c.detail)) {
    return html`${c.detail.map((hit: Record<string, unknown>) => html`<div>matched <strong>${String(hit.name ?? hit.match ?? JSON.stringify(hit))}</strong>${hit.score !== undefined ? html` · score <strong>${String(hit.score)}</strong>` : ''}${hit.list ? ` · ${String(hit.list)}` : ''}</div>`)}`;
  }
  return c.detail === undefined ? '' : html`<code>${JSON.stringify(c.detail)}</code>`;
}

const checksTable = (checks: Check[]) =>
  table(
    'Compliance checks',
    [
      { label: 'Check', cell: (c) => c.check },
      { label: 'Subject', cell: (c) => c.subject },
      { label: 'Result', cell: (c) => badge(c.result) },
      { label: 'Detail', cell: (c) => checkDetail(c) },
    ],
    checks,
    'No checks recorded.',
  );

function customerName(c: { type: string; first_name: string | null; last_name: string | null; business_name: string | null }): string {
  return c.type === 'business' ? (c.business_name ?? '') : [c.first_name, c.last_name].filter(Boolean).join(' ');
}

/** The review queue: cases waiting, oldest first, filtered by business, environment, level and age. */
export async function queuePage(deps: Deps, session: OpsSession, q: Record<string, string | undefined>): Promise<Html> {
  const values = {
    business: q.business && /^[0-9a-f-]{36}$/i.test(q.business) ? q.business.toLowerCase() : undefined,
    environment: q.environment === 'live' || q.environment === 'sandbox' ? (q.environment as 'live' | 'sandbox') : undefined,
    level: q.level === 'basic' || q.level === 'intermediate' ? (q.level as 'basic' | 'intermediate') : undefined,
    min_age_hours: q.min_age_hours && /^\d{1,5}$/.test(q.min_age_hours) ? q.min_age_hours : undefined,
  };
  const rows = await repo.reviewQueue(deps.db, {
    tenantId: values.business,
    environment: values.environment,
    level: values.level,
    minAgeHours: values.min_age_hours ? Number(values.min_age_hours) : undefined,
    limit: 200,
  });
  const body = html`${filterForm(
    '/ops/kyc',
    [
      { name: 'business', label: 'Business id' },
      { name: 'environment', label: 'Environment', type: 'select', options: ['live', 'sandbox'] },
      { name: 'level', label: 'Level', type: 'select', options: ['basic', 'intermediate'] },
      { name: 'min_age_hours', label: 'Waiting at least (hours)' },
    ],
    values,
  )}
<p>${rows.length} case${rows.length === 1 ? '' : 's'} waiting, oldest first.</p>
${table(
  'Cases waiting for review',
  [
    { label: 'Waiting', cell: (r) => age(r.updated_at) },
    { label: 'Customer', cell: (r) => html`<a href="/ops/kyc/${r.id}">${customerName(r) || r.customer_id}</a>` },
    { label: 'Business', cell: (r) => html`<a href="/ops/kyc${queryString({ ...values, business: r.tenant_id })}">${r.tenant_name}</a>` },
    { label: 'Environment', cell: (r) => badge(r.environment) },
    { label: 'Level', cell: (r) => r.level },
    {
      label: 'Hits',
      cell: (r) =>
        (r.checks as Check[])
          .filter((c) => c.result !== 'pass')
          .map((c) => c.check)
          .join(', ') || 'none',
    },
  ],
  rows,
  'No case is waiting for review.',
)}`;
  return opsPage(session, 'kyc', 'KYC review queue', body);
}

type CaseDocument = Awaited<ReturnType<typeof repo.documentsOf>>[number];
type CaseCustomer = Awaited<ReturnType<typeof repo.customerOf>>;
type Case = NonNullable<Awaited<ReturnType<typeof repo.findCaseById>>>;

/** One uploaded document, shown inline to those allowed to see documents. */
function documentFigure(d: CaseDocument, seeDocs: boolean, customer: CaseCustomer): Html {
  const src = `/ops/kyc/documents/${d.id}`;
  const label = `${d.doc_type}${d.doc_sub_type ? ` (${d.doc_sub_type})` : ''}`;
  const view = !seeDocs
    ? html`<p class="empty">Only compliance operators see the documents.</p>`
    : d.content_type === 'application/pdf'
      ? html`<iframe src="${src}" title="${label}" class="document-pdf" width="100%" height="600"></iframe><p><a href="${src}" target="_blank" rel="noopener">Open the PDF on its own</a></p>`
      : INLINE_TYPES.has(d.content_type)
        ? html`<img src="${src}" alt="${label} of ${customer ? customerName(customer) : 'the customer'}" class="document-image">`
        : html`<a href="${src}">Download</a>`;
  return html`<figure class="document" data-doc-type="${d.doc_type}">
  <figcaption>${label} · ${d.country}${d.number ? ` · no. ${d.number}` : ''}${d.dob ? ` · born ${d.dob}` : ''}${d.valid_until ? ` · valid until ${d.valid_until}` : ''} · ${d.filename} (${d.content_type}, ${d.size_bytes} bytes)</figcaption>
  ${view}
</figure>`;
}

/** The three decision forms, for a case waiting for review and an operator who may decide it. */
function decisionForms(c: Case, session: OpsSession): Html {
  return c.status === 'manual_review' && opsCan(session.role, 'kyc.decide')
    ? html`<h2>Decision</h2>
<h3>Approve</h3>
<form method="post" action="/ops/kyc/${c.id}/decide" class="stack" data-confirm="Approve this case? The business is told at once.">${opsCsrf(session)}
  <input type="hidden" name="version" value="${c.updated_at.toISOString()}">
  <input type="hidden" name="decision" value="approve">
  <div class="field"><label for="approve-reason">Note (optional)</label><input id="approve-reason" name="reason" maxlength="1000"></div>
  <button type="submit">Approve</button>
</form>
<h3>Reject</h3>
<form method="post" action="/ops/kyc/${c.id}/decide" class="stack">${opsCsrf(session)}
  <input type="hidden" name="version" value="${c.updated_at.toISOString()}">
  <input type="hidden" name="decision" value="reject">
  <div class="field"><label for="reject-label">Rejection label</label><select id="reject-label" name="label">${REJECT_LABELS.map((l) => html`<option value="${l}">${l}</option>`)}</select></div>
  <div class="field"><label for="reject-type">Reject type</label><select id="reject-type" name="reject_type"><option value="RETRY">RETRY: the customer may try again</option><option value="FINAL">FINAL: never again</option></select></div>
  <div class="field"><label for="reject-reason">Reason</label><input id="reject-reason" name="reason" maxlength="1000" required></div>
  <button type="submit">Reject</button>
</form>
<h3>Request more documents</h3>
<form method="post" action="/ops/kyc/${c.id}/decide" class="stack">${opsCsrf(session)}
  <input type="hidden" name="version" value="${c.updated_at.toISOString()}">
  <input type="hidden" name="decision" value="request_documents">
  <fieldset><legend>Documents to ask for</legend>${REQUESTABLE_DOCUMENTS.map((d) => html`<label><input type="checkbox" name="documents" value="${d}"> ${d}</label> `)}</fieldset>
  <div class="field"><label for="request-reason">What is wrong</label><input id="request-reason" name="reason" maxlength="1000" required></div>
  <button type="submit">Request more documents</button>
</form>`
    : html`<p>This case is <strong>${c.status}</strong>${c.status === 'manual_review' ? ' (your role cannot decide it)' : ''}.</p>`;
}

function customerFacts(customer: CaseCustomer): Html {
  const address = customer?.address as Record<string, unknown> | undefined;
  return customer
    ? facts([
        ['Id', html`<code class="id">${customer.id}</code>`],
        ['Type', customer.type],
        ['Name', customerName(customer)],
        ['Date of birth', customer.date_of_birth],
        ['Email', customer.email],
        ['Phone', customer.phone],
        [
          'Address',
          address
            ? Object.values(address)
                .filter((v) => typeof v === 'string' && v)
                .join(', ')
            : null,
        ],
        ['KYC status', badge(customer.kyc_status)],
      ])
    : html`<p class="empty">The customer is gone.</p>`;
}

/** What happened to the customer's reviews: console decisions, cases, events sent. */
function caseHistory(
  decisions: Awaited<ReturnType<typeof repo.listAudit>>,
  cases: Awaited<ReturnType<typeof repo.casesOfCustomer>>,
  events: Awaited<ReturnType<typeof repo.eventsOf>>,
): Html {
  return html`<h2>History</h2>
<h3>Decisions in the console</h3>
${decisionsTable(
  'Decisions in the console',
  decisions.filter((d) => d.action !== 'kyc.document_viewed'),
)}
<h3>Cases of this customer</h3>
${table(
  'Cases of this customer',
  [
    { label: 'Level', cell: (r) => r.level },
    { label: 'Status', cell: (r) => badge(r.status) },
    { label: 'Reviewed', cell: (r) => when(r.reviewed_at?.toISOString() ?? null) },
    { label: 'Labels', cell: (r) => r.reject_labels.join(', ') },
  ],
  cases,
  'No cases.',
)}
<h3>Events sent to the business</h3>
${table(
  'Events sent to the business',
  [
    { label: 'When', cell: (r) => when(r.created_at.toISOString()) },
    { label: 'Event', cell: (r) => html`<code>${r.event_type}</code>` },
    { label: 'Id', cell: (r) => html`<code class="id">${r.id}</code>` },
  ],
  events,
  'No events.',
)}`;
}

export async function casePage(deps: Deps, reply: FastifyReply, session: OpsSession, id: string, notice?: Html, status = 200) {
  const c = await repo.findCaseById(deps.db, id);
  if (!c) throw notFound('Case');
  const ctx = { tenantId: c.tenant_id, environment: c.environment as Environment };
  const [customer, business, docs, cases, events, decisions] = await Promise.all([
    repo.customerOf(deps.db, ctx, c.customer_id),
    repo.findBusiness(deps.db, c.tenant_id),
    repo.documentsOf(deps.db, ctx, c.customer_id),
    repo.casesOfCustomer(deps.db, ctx, c.customer_id),
    repo.eventsOf(deps.db, ctx, c.customer_id),
    repo.listAudit(deps.db, { target: c.id, limit: 100 }),
  ]);
  const seeDocs = opsCan(session.role, 'kyc.documents');
  const body = html`${facts([
    ['Case', html`<code class="id">${c.id}</code>`],
    ['Status', badge(c.status)],
    ['Level', c.level],
    ['Business', business ? html`<a href="/ops/businesses/${business.id}">${business.name}</a>` : c.tenant_id],
    ['Environment', badge(c.environment)],
    ['Waiting since', when(c.updated_at.toISOString())],
    ['Review reason', c.review_reason],
    ['Reject labels', c.reject_labels.join(', ') || null],
  ])}
<h2>Customer</h2>
${customerFacts(customer)}
<h2>Compliance checks</h2>
${checksTable(c.checks as Check[])}
<h2>Documents</h2>
${docs.length ? docs.map((d) => documentFigure(d, seeDocs, customer)) : html`<p class="empty">No documents uploaded.</p>`}
${decisionForms(c, session)}
${caseHistory(decisions, cases, events)}`;
  // The case page frames its PDFs (served by this console only).
  reply.header(
    'Content-Security-Policy',
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-src 'self'; object-src 'self'; " +
      "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  );
  const title = customer ? `KYC case: ${customerName(customer) || customer.id}` : 'KYC case';
  return sendPage(reply, opsPage(session, 'kyc', title, body, notice), status);
}
