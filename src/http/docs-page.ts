import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { referenceDocument, withFreshIdempotencyKeys } from './openapi-document.js';

const OWN = join(dirname(fileURLToPath(import.meta.url)), 'docs');
const SWAGGER_UI = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

/** Served from memory, read once: the renderer comes with the app, never from another site. */
const ASSETS: Record<string, { type: string; body: Buffer }> = {
  'swagger-ui-bundle.js': { type: 'text/javascript; charset=utf-8', body: readFileSync(join(SWAGGER_UI, 'swagger-ui-bundle.js')) },
  'swagger-ui.css': { type: 'text/css; charset=utf-8', body: readFileSync(join(SWAGGER_UI, 'swagger-ui.css')) },
  'docs.js': { type: 'text/javascript; charset=utf-8', body: readFileSync(join(OWN, 'docs.js')) },
  'docs.css': { type: 'text/css; charset=utf-8', body: readFileSync(join(OWN, 'docs.css')) },
  'logo.svg': { type: 'image/svg+xml', body: readFileSync(join(OWN, 'logo.svg')) },
};

export const PRODUCT_NAME = 'Financial Services API';

/** Scripts only from this server; Swagger UI sets inline styles and shows data: images. */
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; " +
  "font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

function page(): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${PRODUCT_NAME} — API reference</title>
<link rel="icon" href="/docs/static/logo.svg" type="image/svg+xml">
<link rel="stylesheet" href="/docs/static/swagger-ui.css">
<link rel="stylesheet" href="/docs/static/docs.css">
</head>
<body data-spec="/docs/openapi.json">
<header class="docs-header"><img src="/docs/static/logo.svg" alt=""><h1>${PRODUCT_NAME} — API reference</h1>
<nav><a href="/v1/openapi.json">OpenAPI document</a><a href="/dashboard">Dashboard</a></nav></header>
<p id="docs-loading">Loading the reference…</p>
<div id="swagger-ui"></div>
<script src="/docs/static/swagger-ui-bundle.js"></script>
<script src="/docs/static/docs.js"></script>
</body>
</html>`;
}

/**
 * The API reference at /docs: Swagger UI served by the app itself, over a copy of the document
 * whose Idempotency-Key fields are pre-filled with fresh values on every load.
 */
export async function docsRoutes(app: FastifyInstance): Promise<void> {
  const html = page();
  const noAuth = { noAuth: true };
  app.get('/docs', { schema: { hide: true }, config: noAuth }, async (_request, reply) =>
    reply.header('Content-Security-Policy', CSP).header('Cache-Control', 'no-store').type('text/html; charset=utf-8').send(html),
  );
  // Made once, on first use (the routes are all registered by then); each load only swaps keys.
  let reference: ReturnType<typeof referenceDocument> | undefined;
  app.get('/docs/openapi.json', { schema: { hide: true }, config: noAuth }, async (_request, reply) => {
    reference ??= referenceDocument(app.swagger());
    return reply.header('Cache-Control', 'no-store').send(withFreshIdempotencyKeys(reference, () => `docs-${randomUUID()}`));
  });
  // The site's root: a person who opens the server's address lands on the dashboard; browsers
  // asking for the icon get the product's logo.
  app.get('/', { schema: { hide: true }, config: noAuth }, async (_request, reply) => reply.redirect('/dashboard', 302));
  const logo = ASSETS['logo.svg']!;
  app.get('/favicon.ico', { schema: { hide: true }, config: noAuth }, async (_request, reply) =>
    reply.header('Cache-Control', 'public, max-age=86400').type(logo.type).send(logo.body),
  );
  for (const [name, file] of Object.entries(ASSETS)) {
    app.get(`/docs/static/${name}`, { schema: { hide: true }, config: noAuth }, async (_request, reply) =>
      reply.header('Cache-Control', 'public, max-age=3600').type(file.type).send(file.body),
    );
  }
}
