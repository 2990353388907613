import type { Environment } from '../core/context.js';
import type { KeyPair } from '../modules/tenants/service.js';
import { html, type Html } from './html.js';
import { curlCommand } from './empty-states.js';
import { alert, appPage, copyable, csrfField, publicPage, snippet, table, when } from './layout.js';
import type { Flash, Session } from './service.js';

export interface FormState {
  values: Record<string, string>;
  errors: Record<string, string>;
}

const noForm: FormState = { values: {}, errors: {} };

function field(name: string, label: string, type: string, state: FormState, autocomplete: string): Html {
  const error = state.errors[name];
  const id = `in-${name}`;
  return html`<div class="field">
  <label for="${id}">${label}</label>
  <input id="${id}" name="${name}" type="${type}" autocomplete="${autocomplete}" required
    value="${type === 'password' ? '' : (state.values[name] ?? '')}"${error ? html` aria-invalid="true" aria-describedby="${id}-err"` : ''}>
  ${error ? html`<p class="field-error" id="${id}-err">${error}</p>` : ''}
</div>`;
}

export function loginPage(csrf: string, state: FormState = noForm, message?: Html): Html {
  return publicPage(
    'Log in',
    html`<form method="post" action="/dashboard/login" novalidate>
  <input type="hidden" name="_csrf" value="${csrf}">
  ${field('email', 'Email', 'email', state, 'username')}
  ${field('password', 'Password', 'password', state, 'current-password')}
  <button type="submit" class="primary">Log in</button>
</form>
<p>New here? <a href="/dashboard/signup">Create a business account</a></p>`,
    message,
  );
}

export function signupPage(csrf: string, state: FormState = noForm, message?: Html): Html {
  return publicPage(
    'Create your business account',
    html`<form method="post" action="/dashboard/signup" novalidate>
  <input type="hidden" name="_csrf" value="${csrf}">
  ${field('business_name', 'Business name', 'text', state, 'organization')}
  ${field('email', 'Email', 'email', state, 'username')}
  ${field('password', 'Password (at least 12 characters)', 'password', state, 'new-password')}
  <button type="submit" class="primary">Create account</button>
</form>
<p>Already registered? <a href="/dashboard/login">Log in</a></p>`,
    message,
  );
}

export function errorPage(title: string, message: string): Html {
  return publicPage(title, html`${alert('error', message)}<p><a href="/dashboard">Back to the dashboard</a></p>`);
}

export function businessPage(session: Session, name: string): Html {
  return appPage(
    session,
    'business',
    'Business',
    html`<section class="card">
  <dl class="facts">
    <dt>Business name</dt><dd>${name}</dd>
    <dt>Signed in as</dt><dd>${session.email}</dd>
    <dt>Environment shown</dt><dd>${session.environment}</dd>
  </dl>
  ${copyable('tenant-id', 'Business id (send as x-tenant-id)', session.tenantId)}
</section>
<section class="card">
  <h2>Getting started</h2>
  <p>Call the API with the secret key of an environment in the <code>Api-Key</code> header. The key alone
  decides business and environment; <code>x-tenant-id</code> is optional and must match when sent.</p>
</section>`,
  );
}

function oneTimeKeys(flash: Extract<Flash, { kind: 'keys' }>, origin: string): Html {
  const pairs = (Object.entries(flash.keys) as [Environment, KeyPair][]).map(
    ([env, pair]) => html`<h3>${env === 'live' ? 'Live' : 'Sandbox'}</h3>
  ${copyable(`new-secret-${env}`, `New ${env} secret key`, pair.secret_key)}
  ${copyable(`new-public-${env}`, `New ${env} public key`, pair.public_key)}
  ${snippet(`curl-${env}`, `Your first ${env} request: list customers`, curlCommand(origin, 'GET', '/v1/customers', undefined, pair.secret_key))}`,
  );
  const expiry = flash.old_keys_expire_at
    ? html`<p>The previous keys stop working at <time datetime="${flash.old_keys_expire_at}">${flash.old_keys_expire_at}</time>.</p>`
    : '';
  return html`<section class="card one-time" aria-labelledby="one-time-title">
  <h2 id="one-time-title">Copy your secret key now</h2>
  ${alert('info', 'This is the only time the secret key is shown. Store it in your secret manager; afterwards you will only see its masked form.')}
  ${pairs}
  ${expiry}
</section>`;
}

const EXPIRY_CHOICES = [
  [0, 'Now'],
  [3600, 'In 1 hour'],
  [86_400, 'In 24 hours'],
  [604_800, 'In 7 days'],
] as const;

export interface KeysView {
  keys: { id: string; kind: string; masked: string; created_at: string; expires_at: string | null }[];
  publicKey: string | null;
}

/** A request to paste, with the key in `$KEY` (the secret itself is shown only once). */
function tryCard(env: Environment, origin: string): Html {
  return html`<section class="card">
  <h2>Call the API</h2>
  <p>Put your ${env} secret key in <code>KEY</code> (<code>export KEY=sk_${env}_…</code>), then:</p>
  ${snippet('curl-try', `List your ${env} customers`, curlCommand(origin, 'GET', '/v1/customers'))}
  <p>Every <code>POST</code> also needs an <code>Idempotency-Key</code> header; the <a href="/docs">API reference</a> sends requests too.</p>
</section>`;
}

export function keysPage(session: Session, view: KeysView, flash: Flash | null, origin: string, notice?: Html): Html {
  const env = session.environment;
  const rows = table(
    `Active ${env} keys`,
    [
      { label: 'Kind', cell: (k) => k.kind },
      { label: 'Key', cell: (k) => html`<code>${k.masked}</code>` },
      { label: 'Created', cell: (k) => when(k.created_at) },
      { label: 'Expires', cell: (k) => when(k.expires_at) ?? 'Never' },
    ],
    view.keys,
    'No active keys: rotate to create a new pair.',
  );
  const publicKey = view.publicKey
    ? copyable('public-key', `Public key (${env})`, view.publicKey)
    : html`<p>The public key was created outside the dashboard; rotate to see and copy a new one.</p>`;
  return appPage(
    session,
    'keys',
    `API keys · ${env}`,
    html`${flash?.kind === 'keys' ? oneTimeKeys(flash, origin) : ''}
${tryCard(env, origin)}
<section class="card">
  <h2>Public key</h2>
  ${publicKey}
</section>
<section class="card">
  <h2>Active keys</h2>
  ${rows}
</section>
<section class="card">
  <h2>Rotate keys</h2>
  <p>Rotation creates a new key pair for <strong>${env}</strong>. The old pair keeps working until the time you choose.</p>
  <form method="post" action="/dashboard/keys/rotate" class="inline" data-confirm="Create a new ${env} key pair? The old keys stop working at the time you chose.">
    ${csrfField(session)}
    <label for="expire">Old keys expire</label>
    <select id="expire" name="expire_in_seconds">${EXPIRY_CHOICES.map(([s, label]) => html`<option value="${s}">${label}</option>`)}</select>
    <button type="submit" class="danger">Rotate ${env} keys</button>
  </form>
</section>`,
    notice,
  );
}
