import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Deps } from '../../http/deps.js';
import { notFound } from '../../core/errors.js';
import { escapeHtml } from '../../lib/html.js';
import { formatAmount } from '../../lib/money.js';
import { UuidParam } from '../../lib/validators.js';
import { payAtCheckout } from './cards.js';
import { collectionDeps } from './routes.js';
import * as repo from './repo.js';
import { CheckoutPayBody } from './schema.js';
import { sessionMatches } from './service.js';

/**
 * The hosted checkout page of card collections (the `payment_link`): the only place a payer
 * types a card number. No API key: the session token in the link authorizes it. The page posts
 * JSON to /checkout/{id}/pay; nothing about the card is logged or echoed back.
 */
const HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'content-security-policy':
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'; form-action 'none'; frame-ancestors 'none'",
};

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)}</title><style>body{font-family:system-ui,sans-serif;max-width:420px;margin:40px auto;padding:0 16px}
label{display:block;margin:12px 0 4px}input{width:100%;padding:8px;box-sizing:border-box}button{margin-top:16px;padding:10px;width:100%}
#msg{margin-top:16px;font-weight:600}</style></head><body>${body}</body></html>`;
}

function form(id: string, session: string, amount: string): string {
  return page(
    `Pay ${amount}`,
    `<h1>Pay ${escapeHtml(amount)}</h1>
<form id="f" autocomplete="on">
<label for="n">Card number</label><input id="n" name="cc-number" inputmode="numeric" autocomplete="cc-number" required>
<label for="e">Expiry (MM/YY)</label><input id="e" name="cc-exp" autocomplete="cc-exp" placeholder="MM/YY" required>
<label for="c">CVV</label><input id="c" name="cc-csc" inputmode="numeric" autocomplete="cc-csc" required>
<label><input type="checkbox" id="s" style="width:auto"> Save this card</label>
<button type="submit">Pay</button></form><div id="msg" role="status"></div>
<script>
document.getElementById('f').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const msg = document.getElementById('msg');
  msg.textContent = 'Processing…';
  const body = { session: ${JSON.stringify(session)}, card_number: document.getElementById('n').value,
    expiry: document.getElementById('e').value, cvv: document.getElementById('c').value, save_card: document.getElementById('s').checked };
  const res = await fetch(${JSON.stringify(`/checkout/${id}/pay`)}, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const out = await res.json().catch(() => ({}));
  if (res.ok && out.data && out.data.status === 'succeeded') { msg.textContent = 'Payment successful. You can close this page.'; ev.target.remove(); }
  else msg.textContent = (out.data && out.data.failure_message) || (out.error && out.error.message) || 'Payment failed';
});
</script>`,
  );
}

export function checkoutRoutes(deps: Deps): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      '/checkout/:id',
      {
        config: { noAuth: true },
        schema: {
          hide: true,
          params: z.strictObject({ id: UuidParam }),
          querystring: z.object({ session: z.string().max(100).default('') }),
        },
      },
      async (req, reply) => {
        const row = await repo.findCollectionById(deps.db, req.params.id);
        reply.headers(HEADERS);
        if (!row || row.method !== 'card' || !sessionMatches(deps.sealer, row, req.query.session)) {
          return reply.code(404).send(page('Not found', '<h1>This payment link is not valid.</h1>'));
        }
        if (row.status !== 'pending' || row.expires_at <= new Date()) {
          return reply.send(page('Payment', `<h1>This payment is ${escapeHtml(row.status === 'pending' ? 'expired' : row.status)}.</h1>`));
        }
        return reply.send(form(row.id, req.query.session, `${formatAmount(row.amount, row.currency)} ${row.currency}`));
      },
    );

    app.post(
      '/checkout/:id/pay',
      { config: { noAuth: true }, schema: { hide: true, params: z.strictObject({ id: UuidParam }), body: CheckoutPayBody } },
      async (req, reply) => {
        reply.header('cache-control', 'no-store');
        const result = await deps.inTransaction((trx) => payAtCheckout(trx, collectionDeps(deps, req), req.params.id, req.body));
        if (!result) throw notFound('Checkout');
        return { data: result, error: null };
      },
    );
  };
}
