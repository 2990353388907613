import { readFileSync } from 'node:fs';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyInstance } from 'fastify';
import {
  jsonSchemaTransform,
  jsonSchemaTransformObject,
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import type { Config } from './config.js';
import type { Db } from './db/client.js';
import { registerAuth } from './http/auth.js';
import { registerErrorHandling } from './http/envelope.js';
import { Idempotency, idempotencyKeyOf } from './http/idempotency.js';
import { registerObservability } from './http/observability.js';
import { registerRateLimit } from './http/rate-limit.js';
import { BODY_LIMIT, registerTransport, requestIdFrom } from './http/transport.js';
import type { Sealer } from './lib/crypto.js';
import { newId } from './lib/ids.js';
import { dashboardRoutes } from './dashboard/routes.js';
import { accountApplicationRoutes } from './modules/account-applications/routes.js';
import { accountRoutes } from './modules/accounts/routes.js';
import { cardRoutes } from './modules/cards/routes.js';
import { customerRoutes } from './modules/customers/routes.js';
import { fxRoutes } from './modules/fx/routes.js';
import { externalAccountRoutes } from './modules/external-accounts/routes.js';
import { fundAccountRoutes } from './modules/simulations/fund-account.js';
import { payoutSimulationRoutes } from './modules/simulations/payouts.js';
import { collectionSimulationRoutes } from './modules/simulations/collections.js';
import { collectionRoutes } from './modules/collections/routes.js';
import { checkoutRoutes } from './modules/collections/checkout.js';
import { transactionRoutes } from './modules/transactions/routes.js';
import { transferRoutes } from './modules/transfers/routes.js';
import { webhookRoutes } from './modules/webhooks/routes.js';
import { featureRoutes } from './modules/features/routes.js';
import { kycRoutes } from './modules/kyc/routes.js';

export interface RouteSummary {
  method: string;
  url: string;
  publicKeyAllowed: boolean;
  noAuth: boolean;
}

declare module 'fastify' {
  interface FastifyInstance {
    apiRoutes: RouteSummary[];
  }
}

/** What every module's routes and services may use: passed in, never imported as singletons. */
export interface Deps {
  config: Config;
  db: Db;
  dbKind: 'pglite' | 'postgres';
  sealer: Sealer;
  idempotency: Idempotency;
}

export interface AppOptions {
  config: Config;
  db: Db;
  dbKind: 'pglite' | 'postgres';
  sealer: Sealer;
  logger?: boolean | object;
}

/** Header and body fields that never reach a log line. */
const REDACT = [
  'req.headers["api-key"]',
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-client-public-key"]',
  'res.headers["set-cookie"]',
];

export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const { config } = options;
  const https =
    config.TLS_CERT_FILE && config.TLS_KEY_FILE
      ? { https: { cert: readFileSync(config.TLS_CERT_FILE), key: readFileSync(config.TLS_KEY_FILE) } }
      : {};
  const app = Fastify({
    ...https,
    logger: options.logger ?? { level: config.LOG_LEVEL, redact: REDACT },
    bodyLimit: BODY_LIMIT,
    genReqId: (req) => requestIdFrom(req, newId),
    trustProxy: config.TRUSTED_PROXIES.length > 0 ? config.TRUSTED_PROXIES : false,
    routerOptions: { ignoreTrailingSlash: true },
  }).withTypeProvider<ZodTypeProvider>();
  // Every route, for the security suite that checks each /v1 route without a list to maintain.
  const routes: RouteSummary[] = [];
  app.addHook('onRoute', (r) => {
    for (const method of [r.method].flat()) {
      if (method !== 'HEAD') routes.push({ method, url: r.url, publicKeyAllowed: Boolean(r.config?.publicKeyAllowed), noAuth: Boolean(r.config?.noAuth) });
    }
  });
  app.decorate('apiRoutes', routes);
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);

  const deps: Deps = {
    config,
    db: options.db,
    dbKind: options.dbKind,
    sealer: options.sealer,
    idempotency: new Idempotency(options.db, options.sealer, config.IDEMPOTENCY_TTL_HOURS),
  };

  registerErrorHandling(app);
  registerTransport(app, config);
  registerAuth(app, deps.db);
  registerRateLimit(app, config.RATE_LIMIT_PER_MINUTE);
  // Every POST under /v1 needs an Idempotency-Key, checked before the body is validated.
  app.addHook('preValidation', async (request) => {
    if (request.method === 'POST' && request.ctx) idempotencyKeyOf(request);
  });
  registerObservability(app, deps.db);

  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Financial Services API',
        version: '1.0.0',
        description:
          'Banking-as-a-service core. Authenticate with the `Api-Key` header; every POST needs an `Idempotency-Key`. ' +
          'Responses are `{data, error}` envelopes; amounts are decimal strings in major units.',
      },
      components: { securitySchemes: { ApiKeyAuth: { type: 'apiKey', in: 'header', name: 'Api-Key' } } },
      security: [{ ApiKeyAuth: [] }],
    },
    transform: jsonSchemaTransform,
    transformObject: jsonSchemaTransformObject,
  });
  await app.register(fastifySwaggerUi, { routePrefix: '/docs' });
  app.get('/v1/openapi.json', { schema: { hide: true }, config: { noAuth: true } }, async () => app.swagger());

  await app.register(customerRoutes(deps));
  await app.register(externalAccountRoutes(deps));
  await app.register(accountApplicationRoutes(deps));
  await app.register(accountRoutes(deps));
  await app.register(transferRoutes(deps));
  await app.register(transactionRoutes(deps));
  await app.register(fundAccountRoutes(deps));
  await app.register(webhookRoutes(deps));
  await app.register(kycRoutes(deps));
  await app.register(featureRoutes(deps));
  await app.register(fxRoutes(deps));
  await app.register(payoutSimulationRoutes(deps));
  await app.register(collectionRoutes(deps));
  await app.register(collectionSimulationRoutes(deps));
  await app.register(checkoutRoutes(deps));
  await app.register(dashboardRoutes(deps));
  await app.register(cardRoutes(deps));
  return app;
}
