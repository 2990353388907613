import type { Page } from '../db/pagination.js';
import { Html, html, queryString } from './html.js';
import { can, type Permission } from './roles.js';
import { searchForm } from './search-form.js';
import type { Session } from './service.js';

export const NAV = [
  ['overview', 'Overview'],
  ['business', 'Business'],
  ['keys', 'API keys'],
  ['webhooks', 'Webhooks'],
  ['events', 'Events'],
  ['requests', 'Request log'],
  ['customers', 'Customers'],
  ['accounts', 'Accounts'],
  ['transfers', 'Transfers'],
  ['transactions', 'Transactions'],
  ['cards', 'Cards'],
  ['approvals', 'Approvals'],
  ['team', 'Team'],
  ['settings', 'Settings'],
  ['audit', 'Audit log'],
  ['profile', 'Your login'],
] as const;
export type Section = (typeof NAV)[number][0];

/** Sections a role does not see in the navigation (the server refuses them anyway). */
const HIDDEN: Partial<Record<Section, Permission>> = { keys: 'keys', audit: 'team' };

/** The product's name, shown on every page (and before sign-in, so a person knows where they are). */
const PRODUCT = 'Financial Services API';

/** A page's document head: the dashboard's stylesheet and script (the operator console shares them). */
export function pageHead(fullTitle: string): Html {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${fullTitle}</title>
<link rel="icon" href="/favicon.ico" type="image/svg+xml">
<link rel="stylesheet" href="/dashboard/static/app.css">
<script src="/dashboard/static/app.js" defer></script>
</head>`;
}

function head(title: string): Html {
  return pageHead(`${title} · ${PRODUCT} dashboard`);
}

/** The signed-in frame of the dashboard and of the operator console: top bar, side navigation, main. */
export function signedInFrame(page: {
  head: Html;
  bodyClass: string;
  /** What the top bar shows before the signed-in person and the log-out button. */
  topbar: Html;
  who: { email: string; role: string };
  logout: { action: string; csrf: Html };
  links: Html[];
  title: string;
  body: Html;
  notice?: Html | undefined;
}): Html {
  return html`${page.head}
<body class="${page.bodyClass}">
<a class="skip" href="#main">Skip to content</a>
<header class="topbar">
${page.topbar}
  <span class="who">${page.who.email} <small>(${page.who.role})</small></span>
  <form method="post" action="${page.logout.action}">${page.logout.csrf}<button type="submit" class="link">Log out</button></form>
</header>
<div class="frame">
<nav class="sidebar" aria-label="Sections">
<input type="checkbox" id="nav-toggle" class="nav-toggle" aria-controls="nav-links">
<label for="nav-toggle" class="nav-toggle-label">Menu<span class="sr-only"> (sections)</span></label>
<ul id="nav-links">${page.links}</ul>
</nav>
<main id="main" tabindex="-1">
<h1>${page.title}</h1>
${page.notice ?? ''}
${page.body}
</main>
</div>
<p class="sr-only" aria-live="polite" id="live-status"></p>
</body>
</html>`;
}

export function csrfField(session: Session): Html {
  return html`<input type="hidden" name="_csrf" value="${session.csrfToken}">`;
}

function environmentSwitch(session: Session, section: Section): Html {
  const button = (env: 'sandbox' | 'live', label: string) =>
    html`<button type="submit" name="environment" value="${env}" class="env-${env}" aria-pressed="${session.environment === env ? 'true' : 'false'}">${label}</button>`;
  return html`<form method="post" action="/dashboard/environment" class="env-switch" aria-label="Environment">
  ${csrfField(session)}<input type="hidden" name="back" value="${section}">
  ${button('sandbox', 'Sandbox')}${button('live', 'Live')}
</form>`;
}

/** The signed-in frame: top bar (business, environment switch, log out) and side navigation. */
export function appPage(session: Session, section: Section, title: string, body: Html, notice?: Html): Html {
  const links = NAV.filter(([id]) => !HIDDEN[id] || can(session.role, HIDDEN[id]!)).map(
    ([id, label]) => html`<li><a href="/dashboard/${id}"${id === section ? html` aria-current="page"` : ''}>${label}</a></li>`,
  );
  return signedInFrame({
    head: head(title),
    bodyClass: `env-${session.environment}`,
    topbar: html`  <span class="brand">Financial Services</span>
  <span class="env-badge" id="env-badge">${session.environment === 'live' ? 'Live data' : 'Sandbox data'}</span>
  ${environmentSwitch(session, section)}
  ${searchForm()}`,
    who: session,
    logout: { action: '/dashboard/logout', csrf: csrfField(session) },
    links,
    title,
    body,
    notice,
  });
}

/** Pages before sign-in (log in, sign up, errors). */
export function publicPage(title: string, body: Html, status?: Html): Html {
  return html`${head(title)}
<body class="public">
<main id="main" class="card narrow">
<p class="product-name">${PRODUCT}</p>
<h1>${title}</h1>
${status ?? ''}
${body}
</main>
</body>
</html>`;
}

export function alert(kind: 'error' | 'info' | 'success', message: string | Html): Html {
  return html`<div class="alert alert-${kind}" role="${kind === 'error' ? 'alert' : 'status'}">${message}</div>`;
}

/** A value with a copy button (public key, one-time secrets). */
export function copyable(id: string, label: string, value: string): Html {
  return html`<div class="copyable">
  <span class="label" id="${id}-label">${label}</span>
  <code id="${id}" class="key" aria-labelledby="${id}-label">${value}</code>
  <button type="button" class="copy" data-copy="${id}" aria-describedby="${id}-label">Copy</button>
</div>`;
}

/**
 * A small button that copies `value` itself (static/app.js); `what` names it for screen readers,
 * `text` is what it shows ("Copy id" beside a name, so nobody expects the name to be copied).
 */
export function copyButton(value: string, what: string, text = 'Copy'): Html {
  return html`<button type="button" class="copy copy-small" data-copy-text="${value}" aria-label="Copy ${what} ${value}">${text}</button>`;
}

/** A command to paste into a shell (curl), shown whole and wrapped, with a copy button. */
export function snippet(id: string, label: string, text: string): Html {
  return html`<div class="snippet">
  <p class="snippet-label" id="${id}-label">${label}</p>
  <pre class="snippet-code" tabindex="0" aria-labelledby="${id}-label"><code id="${id}">${text}</code></pre>
  <button type="button" class="copy" data-copy="${id}" aria-describedby="${id}-label">Copy</button>
</div>`;
}

export interface Column<T> {
  label: string;
  cell: (row: T) => Html | string | number | null;
  numeric?: boolean;
}

export function table<T>(caption: string, columns: Column<T>[], rows: T[], empty: string | Html): Html {
  if (rows.length === 0 && empty instanceof Html) return empty;
  if (rows.length === 0) return html`<p class="empty">${empty}</p>`;
  return html`<div class="table-wrap"><table>
<caption class="sr-only">${caption}</caption>
<thead><tr>${columns.map((c) => html`<th scope="col"${c.numeric ? html` class="num"` : ''}>${c.label}</th>`)}</tr></thead>
<tbody>${rows.map(
    (r) => html`<tr>${columns.map((c) => html`<td${c.numeric ? html` class="num"` : ''}>${c.cell(r) ?? '—'}</td>`)}</tr>`,
  )}</tbody>
</table></div>`;
}

/** Previous / next links keeping the filters; page numbers come from the list's own count. */
export function pager(base: string, filters: Record<string, string | undefined>, page: Page<unknown>): Html {
  const link = (p: number, label: string, rel: string) =>
    html`<a href="${base}${queryString({ ...filters, page: p })}" rel="${rel}">${label}</a>`;
  const total = page.total_pages === null ? 'many' : String(Math.max(page.total_pages, 1));
  return html`<nav class="pager" aria-label="Pages">
  ${page.page > 1 ? link(page.page - 1, '← Previous', 'prev') : ''}
  <span>Page ${page.page} of ${total}${page.total_items !== null ? ` · ${page.total_items} items` : ''}</span>
  ${page.next_cursor ? link(page.page + 1, 'Next →', 'next') : ''}
</nav>`;
}

export interface FilterField {
  name: string;
  label: string;
  type?: 'text' | 'date' | 'select';
  options?: readonly string[];
}

/** A GET form of filters: bookmarkable, works without JavaScript. */
export function filterForm(base: string, fields: FilterField[], values: Record<string, string | undefined>): Html {
  const control = (f: FilterField) => {
    const id = `f-${f.name}`;
    const value = values[f.name] ?? '';
    if (f.type === 'select') {
      return html`<label for="${id}">${f.label}</label><select id="${id}" name="${f.name}"><option value="">Any</option>${(
        f.options ?? []
      ).map((o) => html`<option value="${o}"${o === value ? html` selected` : ''}>${o}</option>`)}</select>`;
    }
    return html`<label for="${id}">${f.label}</label><input id="${id}" name="${f.name}" type="${f.type ?? 'text'}" value="${value}">`;
  };
  return html`<form method="get" action="${base}" class="filters" role="search">
  ${fields.map((f) => html`<div class="field">${control(f)}</div>`)}
  <div class="field actions"><button type="submit">Filter</button> <a href="${base}">Clear</a></div>
</form>`;
}

export function badge(value: string): Html {
  return html`<span class="badge badge-${value.replace(/[^a-z_]/g, '')}">${value}</span>`;
}

/** An id in a table: monospace, never wrapped, with a copy button. */
export function idCell(id: string | null, what = 'id'): Html | null {
  return id ? html`<span class="with-copy"><code class="id">${id}</code>${copyButton(id, what)}</span>` : null;
}

/**
 * A long value in a narrow column (request id, Idempotency-Key): shortened in the middle, whole in
 * its title, copied whole by its button; `href` makes the text a link.
 */
export function shortValue(value: string | null, what: string, href?: string): Html | null {
  if (!value) return null;
  // Both ends: time-ordered ids share their first characters with their neighbours.
  const shown = value.length > 18 ? `${value.slice(0, 8)}…${value.slice(-6)}` : value;
  const code = html`<code class="id trunc" title="${value}">${shown}</code>`;
  return html`<span class="with-copy">${href ? html`<a href="${href}">${code}</a>` : code}${copyButton(value, what)}</span>`;
}

/** A timestamp as `2024-01-15 10:30:00 UTC`, machine-readable in `datetime`. */
export function when(iso: string | null): Html | null {
  return iso ? html`<time datetime="${iso}">${iso.replace('T', ' ').replace(/\.\d+Z$|Z$/, ' UTC')}</time>` : null;
}

/** Pages that show one resource: every id on any page links to its page through these. */
const DETAIL = {
  customer: 'customers',
  account: 'accounts',
  transfer: 'transfers',
  card: 'cards',
  event: 'events',
  request: 'requests',
} as const;
export type DetailKind = keyof typeof DETAIL;

export function detailPath(kind: DetailKind, id: string): string {
  return `/dashboard/${DETAIL[kind]}/${encodeURIComponent(id)}`;
}

/** An id that links to its own page, shortened in the middle (`label` overrides the text shown). */
export function idLink(kind: DetailKind, id: string | null | undefined, label?: string): Html | null {
  if (!id) return null;
  if (label === undefined) return shortValue(id, `${kind} id`, detailPath(kind, id));
  return html`<span class="with-copy"><a href="${detailPath(kind, id)}"><code class="id">${label}</code></a>${copyButton(id, `${kind} id`, 'Copy id')}</span>`;
}

/** JSON text pretty-printed when it parses, as it is otherwise. */
export function prettyJson(text: string | null): string {
  if (text === null) return '';
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/** A definition list of facts (label → value). */
export function facts(rows: [string, Html | string | number | null | undefined][]): Html {
  return html`<dl class="facts">${rows.map(([k, v]) => html`<dt>${k}</dt><dd>${v ?? '—'}</dd>`)}</dl>`;
}
