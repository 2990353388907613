import { readFileSync } from 'node:fs';
import fastifySwagger from '@fastify/swagger';
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import { jsonSchemaTransformObject, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { serializerCompiler } from './http/serializer.js';
import { validatorCompiler } from './http/validation.js';
import type { Config } from './config.js';
import type { ChangeFeed } from './db/change-feed.js';
import type { Db, PoolStats, ReplicaStats } from './db/client.js';
import { retryOnConflict } from './db/retry.js';
import { registerAuth } from './http/auth.js';
import { registerErrorHandling } from './http/envelope.js';
import type { Deps } from './http/deps.js';
import { Idempotency, idempotencyKeyOf } from './http/idempotency.js';
import { registerInFlight } from './http/in-flight.js';
import { lazyChildLogger } from './http/lazy-logger.js';
import { registerObservability } from './http/observability.js';
import { openApiTransform } from './http/openapi.js';
import { polishDocument } from './http/openapi-document.js';
import { docsRoutes, PRODUCT_NAME } from './http/docs-page.js';
import { registerRateLimit } from './http/rate-limit.js';
import { registerRequestLog } from './http/request-log.js';
import { assertDeclaresErrors } from './http/route-errors.js';
import { processLogDestination } from './lib/log-destination.js';
import { pinoRedactPaths, redactString } from './lib/redact.js';
import { RequestLog } from './modules/request-log/service.js';
import { BODY_LIMIT, registerTransport, requestIdFrom } from './http/transport.js';
import { openCounters } from './lib/counters.js';
import type { Sealer } from './lib/crypto.js';
import { newId } from './lib/ids.js';
import { dashboardRoutes } from './dashboard/routes.js';
import { opsRoutes } from './ops/routes.js';
import { bankFileRoutes, bankSimulationRoutes } from './modules/bank-files/routes.js';
import { bankMetrics } from './modules/bank-files/metrics.js';
import { bankDeps } from './workers/bank-files.js';
import { accountApplicationRoutes } from './modules/account-applications/routes.js';
import { accountRoutes } from './modules/accounts/routes.js';
import { cardRoutes } from './modules/cards/routes.js';
import { customerRoutes } from './modules/customers/routes.js';
import { fxRoutes } from './modules/fx/routes.js';
import { externalAccountRoutes } from './modules/external-accounts/routes.js';
import { fundAccountRoutes } from './modules/collections/fund-account-routes.js';
import { payoutSimulationRoutes } from './modules/transfers/simulation-routes.js';
import { collectionSimulationRoutes } from './modules/collections/simulation-routes.js';
import { testClockRoutes } from './modules/test-clocks/routes.js';
import { collectionRoutes } from './modules/collections/routes.js';
import { checkoutRoutes } from './modules/collections/checkout.js';
import { transactionRoutes } from './modules/transactions/routes.js';
import { statementRoutes } from './modules/statements/routes.js';
import { transferRoutes } from './modules/transfers/routes.js';
import { transferReferenceRoutes } from './modules/transfer-reference/routes.js';
import { webhookRoutes } from './modules/webhooks/routes.js';
import { featureRoutes } from './modules/features/routes.js';
import { kycRoutes } from './modules/kyc/routes.js';
import { lookupKey } from './modules/tenants/service.js';

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

export interface AppOptions {
  config: Config;
  db: Db;
  dbKind: 'pglite' | 'postgres';
  sealer: Sealer;
  logger?: boolean | object;
  /** Notifications that invalidate the key cache in every process (DatabaseHandle.changes). */
  changes?: ChangeFeed | undefined;
  /** Pool figures for /metrics (DatabaseHandle.poolStats). */
  poolStats?: (() => PoolStats) | undefined;
  /** The PostgreSQL host written to, `host:port`, for /metrics (DatabaseHandle.primaryInUse). */
  primaryInUse?: (() => string) | undefined;
  /** Lag-tolerant reads (DatabaseHandle.reads); unset: `db`. */
  reads?: (() => Db) | undefined;
  /** The read replica for /metrics (DatabaseHandle.replicaStats). */
  replicaStats?: (() => ReplicaStats) | undefined;
}

/** Header and body fields that never reach a log line: the same rules as the request log's. */
const REDACT = pinoRedactPaths();

export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const { config } = options;
  const app = createServer(options);
  collectRoutes(app);
  const deps = depsOf(app, options);

  app.addHook('onClose', () => deps.counters.close());
  // Start counting in Redis when it answers soon; if not, per process until it does (logged).
  await deps.counters.ready(2000);

  registerErrorHandling(app);
  registerInFlight(app);
  registerAccessLog(app);
  registerTransport(app, config);
  registerAuth(app, (key) => lookupKey(deps.db, key), options.changes);
  registerRateLimit(app, config.RATE_LIMIT_PER_MINUTE, deps.counters);
  // Every POST under /v1 needs an Idempotency-Key, checked before the body is validated.
  app.addHook('preValidation', async (request) => {
    if (request.method === 'POST' && request.ctx) idempotencyKeyOf(request);
  });
  registerObservability(app, deps.db, options.poolStats, {
    primaryInUse: options.primaryInUse,
    replicaStats: options.replicaStats,
    more: [bankMetrics(deps.db)],
  });
  startRequestLog(app, deps);
  await registerOpenApi(app, config);
  await registerModules(app, deps, options);
  return app;
}

/** The Fastify server: TLS when configured, the process log, request ids, proxies. */
function createServer(options: AppOptions) {
  const { config } = options;
  const https =
    config.TLS_CERT_FILE && config.TLS_KEY_FILE
      ? { https: { cert: readFileSync(config.TLS_CERT_FILE), key: readFileSync(config.TLS_KEY_FILE) } }
      : {};
  return Fastify({
    ...https,
    logger: options.logger ?? {
      level: config.LOG_LEVEL,
      redact: REDACT,
      stream: processLogDestination({ maxBufferedBytes: config.LOG_BUFFER_BYTES }),
    },
    bodyLimit: BODY_LIMIT,
    // One access log line per request, at its end (the onResponse hook below), instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    // A request's logger is made when it first writes (http/lazy-logger.ts): most never do.
    childLoggerFactory: lazyChildLogger,
    genReqId: (req) => requestIdFrom(req, newId),
    trustProxy: config.TRUSTED_PROXIES.length > 0 ? config.TRUSTED_PROXIES : false,
    routerOptions: { ignoreTrailingSlash: true },
  }).withTypeProvider<ZodTypeProvider>();
}

type ServerApp = ReturnType<typeof createServer>;

/** Every route, for the security suite that checks each /v1 route without a list to maintain. */
function collectRoutes(app: ServerApp): void {
  const routes: RouteSummary[] = [];
  app.addHook('onRoute', (r) => {
    assertDeclaresErrors(r);
    for (const method of [r.method].flat()) {
      if (method !== 'HEAD')
        routes.push({ method, url: r.url, publicKeyAllowed: Boolean(r.config?.publicKeyAllowed), noAuth: Boolean(r.config?.noAuth) });
    }
  });
  app.decorate('apiRoutes', routes);
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
}

/** What every route plugin is handed: the database, the sealer, idempotency, units of work, counters. */
function depsOf(app: ServerApp, options: AppOptions): Deps {
  const { config } = options;
  return {
    config,
    db: options.db,
    readDb: options.reads ?? (() => options.db),
    dbKind: options.dbKind,
    sealer: options.sealer,
    idempotency: new Idempotency(options.db, options.sealer, config.IDEMPOTENCY_TTL_HOURS),
    // A deadlock or serialization failure rolled the unit back whole: it runs again (db/retry.ts).
    inTransaction: (work) => retryOnConflict(() => options.db.transaction().execute(work)),
    inSnapshot: (work) => options.db.transaction().setIsolationLevel('repeatable read').setAccessMode('read only').execute(work),
    counters: openCounters(config, app.log),
  };
}

function registerAccessLog(app: ServerApp): void {
  // The access log: one line per request when it ends, of plain fields that cannot hold a
  // sensitive field, written without pino's redaction (REDACT): it runs every value of a line
  // through every wildcard path, whether object or number, which for a line per request is a
  // large share of the server's CPU (docs/benchmarks.md#the-figures-behind-the-defaults). The URL is masked like the request log's
  // (key-shaped strings, card numbers); a route whose URL holds a secret logs its `logUrl`.
  const accessLog = app.log.child({}, { redact: [] });
  app.addHook('onResponse', (request, reply, done) => {
    accessLog.info(
      {
        reqId: request.id,
        method: request.method,
        url: request.routeOptions.config.logUrl ?? redactString(request.url),
        statusCode: reply.statusCode,
        remoteAddress: request.ip,
        responseTime: reply.elapsedTime,
      },
      'request completed',
    );
    done();
  });
}

function startRequestLog(app: ServerApp, deps: Deps): void {
  const { config } = deps;
  // The API request log: buffered in memory, written by its own flusher, never on a request's path.
  const requestLog =
    config.REQUEST_LOG === 'on' ? new RequestLog(deps.db, { onError: (err) => app.log.warn({ err }, 'request log flush failed') }) : null;
  app.decorate('requestLog', requestLog);
  if (requestLog) {
    registerRequestLog(app, requestLog);
    requestLog.start();
    app.addHook('onClose', async () => requestLog.stop());
  }
}

/** The OpenAPI document (and the docs pages that read it). */
async function registerOpenApi(app: ServerApp, config: AppOptions['config']): Promise<void> {
  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: PRODUCT_NAME,
        version: '1.0.0',
        description:
          'Banking-as-a-service core. Authenticate with the `Api-Key` header; every POST needs an `Idempotency-Key`. ' +
          'Responses are `{data, error}` envelopes; amounts are decimal strings in major units.',
      },
      components: { securitySchemes: { ApiKeyAuth: { type: 'apiKey', in: 'header', name: 'Api-Key' } } },
      security: [{ ApiKeyAuth: [] }],
    },
    transform: openApiTransform,
    transformObject: (input) => polishDocument(jsonSchemaTransformObject(input), { serverUrl: config.PUBLIC_BASE_URL }),
  });
  await app.register(docsRoutes);
  app.get('/v1/openapi.json', { schema: { hide: true }, config: { noAuth: true } }, async () => app.swagger());
}

/** The API's modules, the dashboard and the operator console. */
async function registerModules(app: ServerApp, deps: Deps, options: AppOptions): Promise<void> {
  const { config } = options;
  await app.register(customerRoutes(deps));
  await app.register(externalAccountRoutes(deps));
  await app.register(accountApplicationRoutes(deps));
  await app.register(accountRoutes(deps));
  await app.register(transferRoutes(deps));
  await app.register(transferReferenceRoutes(deps));
  await app.register(transactionRoutes(deps));
  await app.register(statementRoutes(deps));
  await app.register(fundAccountRoutes(deps));
  await app.register(webhookRoutes(deps));
  await app.register(kycRoutes(deps));
  await app.register(featureRoutes(deps));
  await app.register(fxRoutes(deps));
  await app.register(payoutSimulationRoutes(deps));
  await app.register(collectionRoutes(deps));
  await app.register(collectionSimulationRoutes(deps));
  await app.register(testClockRoutes(deps));
  await app.register(checkoutRoutes(deps));
  await app.register(dashboardRoutes(deps));
  const bank = bankDeps(config, options.sealer, app.log);
  await app.register(opsRoutes(deps, bank));
  await app.register(cardRoutes(deps));
  await app.register(bankFileRoutes(deps, bank));
  await app.register(bankSimulationRoutes(deps, bank));
}
