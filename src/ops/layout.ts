import { html, type Html } from '../dashboard/html.js';
import { pageHead, signedInFrame, table, when } from '../dashboard/layout.js';
import type { AuditRow } from './repo.js';
import { opsCan, type OpsPermission } from './roles.js';
import type { OpsSession } from './service.js';

/**
 * The console's frame: the dashboard's stylesheet and script (same look), its own navigation.
 * A section is listed only to roles that may open it. A new section is one entry here and one
 * route plugin in routes.ts.
 */
export const OPS_NAV: readonly { id: string; label: string; permission: OpsPermission }[] = [
  { id: 'kyc', label: 'KYC review', permission: 'kyc.read' },
  { id: 'payouts', label: 'Payouts', permission: 'payouts.read' },
  { id: 'bank', label: 'Bank files', permission: 'bank.read' },
  { id: 'bank/exceptions', label: 'Bank exceptions', permission: 'bank.read' },
  { id: 'bank/reconciliations', label: 'Reconciliation', permission: 'bank.read' },
  { id: 'businesses', label: 'Businesses', permission: 'businesses.read' },
  { id: 'operators', label: 'Operators', permission: 'operators' },
  { id: 'audit', label: 'Audit log', permission: 'audit' },
  { id: 'profile', label: 'Your login', permission: 'audit' },
];

function head(title: string): Html {
  return pageHead(`${title} · Operator console`);
}

export function opsCsrf(session: OpsSession): Html {
  return html`<input type="hidden" name="_csrf" value="${session.csrfToken}">`;
}

export function opsPage(session: OpsSession, section: string, title: string, body: Html, notice?: Html): Html {
  const links = OPS_NAV.filter((n) => opsCan(session.role, n.permission)).map(
    (n) => html`<li><a href="/ops/${n.id}"${n.id === section ? html` aria-current="page"` : ''}>${n.label}</a></li>`,
  );
  return signedInFrame({
    head: head(title),
    bodyClass: 'env-live ops',
    topbar: html`  <span class="brand">Financial Services · Operator console</span>`,
    who: session,
    logout: { action: '/ops/logout', csrf: opsCsrf(session) },
    links,
    title,
    body,
    notice,
  });
}

export function opsPublicPage(title: string, body: Html, status?: Html): Html {
  return html`${head(title)}
<body class="public ops">
<main id="main" class="card narrow">
<h1>${title}</h1>
${status ?? ''}
${body}
</main>
</body>
</html>`;
}

/** Hours (or days) since a moment, for queues. */
export function age(since: Date, now = Date.now()): string {
  const hours = Math.max(0, (now - since.getTime()) / 3_600_000);
  if (hours < 1) return `${Math.round(hours * 60)} min`;
  if (hours < 48) return `${Math.floor(hours)} h`;
  return `${Math.floor(hours / 24)} d`;
}

/** The audit rows about one thing (a case, a payout, a business, a connection): who did what, when and why. */
export function decisionsTable(caption: string, rows: AuditRow[], empty = 'No decision yet.'): Html {
  return table(
    caption,
    [
      { label: 'When', cell: (r) => when(r.at.toISOString()) },
      { label: 'Operator', cell: (r) => r.operator_email },
      { label: 'Action', cell: (r) => html`<code>${r.action}</code>` },
      { label: 'Reason', cell: (r) => r.reason },
    ],
    rows,
    empty,
  );
}
