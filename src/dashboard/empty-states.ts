import type { Environment } from '../core/context.js';
import { html, type Html } from './html.js';
import { snippet } from './layout.js';

/** A curl command calling the API with the secret key in `$KEY` (or `key` itself), one header a line. */
export function curlCommand(origin: string, method: 'GET' | 'POST', path: string, body?: string, key = '$KEY'): string {
  const lines = [`curl -s ${method === 'POST' ? '-X POST ' : ''}"${origin}${path}"`, `-H "Api-Key: ${key}"`];
  if (method === 'POST') {
    lines.push(`-H 'Content-Type: application/json'`, `-H "Idempotency-Key: $(node -p 'crypto.randomUUID()')"`);
  }
  if (body) lines.push(`-d '${body}'`);
  return lines.join(' \\\n  ');
}

/** The README's customer, one line per group of fields (JSON allows the line breaks, the shell keeps them). */
const CUSTOMER_BODY = [
  '{"type":"individual","first_name":"John","last_name":"Doe","email":"john.doe@example.com",',
  '    "phone":"+2348012345678","gender":"male","date_of_birth":"1990-01-15",',
  '    "address":{"address_line1":"12 Marina Road","city":"Lagos","country":"NG","postal_code":"101001","state":"NG-LA"}}',
].join('\n');

const KEY_HINT = html`<p class="empty-links">Set <code>KEY</code> to your secret key (<a href="/dashboard/keys">API keys</a>) ·
  <a href="/docs">API reference</a></p>`;

function state(message: Html, command?: string): Html {
  return html`<div class="empty-state" role="status">
  <p class="empty-message">${message}</p>
  ${command ? html`${snippet('empty-curl', 'Try it in a shell', command)}${KEY_HINT}` : ''}
</div>`;
}

/** Kinds of list with their own first step. */
export type EmptyKind =
  | 'customers'
  | 'accounts'
  | 'transfers'
  | 'transactions'
  | 'cards'
  | 'webhooks'
  | 'events'
  | 'requests'
  | 'approvals';

const STATES: Record<EmptyKind, (origin: string, environment: Environment) => Html> = {
  customers: (o) =>
    state(
      html`No customers yet — create one with <code>POST /v1/customers</code>:`,
      curlCommand(o, 'POST', '/v1/customers', CUSTOMER_BODY),
    ),
  accounts: (o) =>
    state(
      html`No accounts yet — open one with <code>POST /v1/accounts</code> (add <code>"customer_id"</code> for a customer's account):`,
      curlCommand(o, 'POST', '/v1/accounts', '{"currency":"NGN","label":"treasury"}'),
    ),
  transfers: (o) =>
    state(
      html`No transfers yet — move money between two accounts with <code>POST /v1/transfer</code>. Set <code>ACCOUNT</code>
  (it needs a balance) and <code>OTHER</code> to two ids from <a href="/dashboard/accounts">Accounts</a>:`,
      curlCommand(
        o,
        'POST',
        '/v1/transfer',
        '{"source":{"id":"\'"$ACCOUNT"\'"},"destination":{"destination_type":"internal_account","id":"\'"$OTHER"\'"},"amount":"250.50"}',
      ),
    ),
  transactions: (o, env) =>
    env === 'live'
      ? state(html`No transactions yet — they appear when money arrives or moves: see <a href="/dashboard/transfers">Transfers</a>.`)
      : state(
          html`No transactions yet — they appear when money moves. Fund a sandbox account (set <code>ACCOUNT</code> to an id from
  <a href="/dashboard/accounts">Accounts</a>):`,
          curlCommand(o, 'POST', '/v1/simulations/accounts/$ACCOUNT/fund', '{"amount":"1000.00"}'),
        ),
  cards: () =>
    state(
      html`No cards yet — issue one to an approved customer with <code>POST /v1/cards</code>; the
  <a href="/docs">API reference</a> shows the body. Start from <a href="/dashboard/customers">Customers</a>.`,
    ),
  webhooks: () =>
    state(
      html`No endpoints yet — add one with the form above (or <code>POST /v1/webhooks/endpoints</code>, see the
  <a href="/docs">API reference</a>); every event is then signed and sent to it.`,
    ),
  events: () =>
    state(
      html`No events yet — they are written when customers, accounts and transfers change.
  <a href="/dashboard/customers">Create a customer</a> to see the first one, and
  <a href="/dashboard/webhooks">register a webhook endpoint</a> to receive them.`,
    ),
  requests: (o) =>
    state(
      html`No API requests yet — every <code>/v1</code> call made with this environment's keys shows up here. Send one:`,
      curlCommand(o, 'GET', '/v1/customers'),
    ),
  approvals: () =>
    state(
      html`Nothing is waiting for approval. To have a second person approve FX orders, new payees or payouts above an
  amount, an owner or admin turns it on under <a href="#approval-settings">When approval is needed</a>; such requests then wait here.`,
    ),
};

/** The first step of an empty list, with a command to copy where the API does it. */
export function emptyState(kind: EmptyKind, origin: string, environment: Environment = 'sandbox'): Html {
  return STATES[kind](origin, environment);
}

/** `kind` when a list of that section has its own first step. */
export function isEmptyKind(kind: string): kind is EmptyKind {
  return Object.hasOwn(STATES, kind);
}
