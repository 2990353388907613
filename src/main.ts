import { setFlagsFromString } from 'node:v8';
import { buildApp } from './app.js';
import { loadConfig } from './config.js';
import { checkDatabaseBudget, openRuntime } from './runtime.js';
import { countTenants, createTenant } from './modules/tenants/service.js';
import { startWorkers } from './workers/index.js';
import { createDemoBusiness } from './dashboard/service.js';
import { randomBase62 } from './lib/crypto.js';

/** After SIGTERM the process ends within this, whatever hangs (exit 1 and a log line if forced). */
const SHUTDOWN_DEADLINE_MS = 10_000;
/** How long shutdown waits for the background workers' current ticks. */
const WORKER_DRAIN_MS = 2_000;
/** How long shutdown waits for requests in flight before it closes their connections. */
const HTTP_DRAIN_MS = 5_000;

/**
 * V8 lets the old generation grow to up to four times what the last full collection kept alive
 * before it collects again. Requests here live a few milliseconds past a young collection (they
 * wait for their batch), so most garbage is promoted and the heap grows to several times its live
 * data. Growing by half instead keeps the peak memory lower at the same throughput
 * (docs/benchmarks.md#the-figures-behind-the-defaults). V8 reads this flag each time it sets the next limit, so setting it at start is enough.
 *
 * The young generation is the other half, and it cannot be set from here (V8 sizes it before any
 * code runs): `npm start` passes `--max-semi-space-size=32`, twice V8's default. A young
 * collection copies what is still alive, which here is the requests waiting for their batch, so
 * collecting half as often copies and promotes about half as much: more reads and transfers served
 * for less CPU each, for a little more peak memory (docs/benchmarks.md#the-figures-behind-the-defaults).
 * It also passes `--no-allocation-site-pretenuring`: V8 otherwise decides that allocation sites
 * whose objects survive young collections (a waiting request's) should allocate straight into
 * the old generation, which then fills about twice as fast, and each of its collections holds
 * every request in flight (docs/benchmarks.md#the-figures-behind-the-defaults).
 */
setFlagsFromString('--heap-growing-percent=50');

let signalledDuringStartup: string | undefined;
const duringStartup = (signal: string) => {
  // Start-up finishes (the database opens and migrates cleanly), then the server stops at once.
  signalledDuringStartup = signal;
  setTimeout(() => process.exit(1), SHUTDOWN_DEADLINE_MS).unref();
};
process.once('SIGINT', duringStartup);
process.once('SIGTERM', duringStartup);

async function main() {
  const config = loadConfig();
  const { handle, sealer } = await openRuntime(config);

  let demo: Awaited<ReturnType<typeof createTenant>> | undefined;
  let demoLogin: { email: string; password: string } | undefined;
  if (config.DEMO_TENANT && (await countTenants(handle.db)) === 0) {
    demoLogin = { email: 'demo@example.com', password: randomBase62(16) };
    demo = await createDemoBusiness(handle.db, (work) => handle.db.transaction().execute(work), demoLogin);
  }

  await checkDatabaseBudget(config, handle); // scale: refuses a deployment that cannot fit max_connections
  const app = await buildApp({
    config,
    db: handle.db,
    dbKind: handle.kind,
    sealer,
    changes: config.ROLE === 'worker' ? undefined : handle.changes,
    poolStats: handle.poolStats,
    primaryInUse: handle.primaryInUse,
    reads: handle.reads,
    replicaStats: handle.replicaStats,
  });
  const workers = config.ROLE === 'api' ? undefined : startWorkers({ config, db: handle.db, dbKind: handle.kind, sealer, log: app.log });
  if (config.ROLE !== 'worker') await app.listen({ port: config.PORT, host: config.HOST });

  printBanner(config, app, handle.kind, demo, demoLogin);

  // SIGTERM / SIGINT: stop accepting, drain the requests in flight, stop the workers, close the
  // database (PGlite flushes and frees its lock), exit 0. Whatever hangs, the process still ends:
  // after SHUTDOWN_DEADLINE_MS it exits 1, logging the step it was stuck in. A second signal
  // during shutdown exits at once.
  const stop = stopper(app, handle, workers);
  process.off('SIGINT', duringStartup);
  process.off('SIGTERM', duringStartup);
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  if (signalledDuringStartup) void stop(signalledDuringStartup);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});

type App = Awaited<ReturnType<typeof buildApp>>;
type Workers = ReturnType<typeof startWorkers>;
type Failed = (what: string) => (err: unknown) => void;

/** Where to reach the server, and a demo business's keys when one was just made. */
function printBanner(
  config: ReturnType<typeof loadConfig>,
  app: App,
  kind: string,
  demo: Awaited<ReturnType<typeof createTenant>> | undefined,
  demoLogin: { email: string; password: string } | undefined,
): void {
  const scheme = config.TLS_CERT_FILE ? 'https' : 'http';
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  const base = `${scheme}://${config.HOST}:${port}`;
  const db = kind === 'pglite' ? `embedded PGlite in ${config.DATA_DIR}` : 'PostgreSQL (DATABASE_URL)';
  console.log(`\nFinancial Services API (${config.PROFILE}, ${db})`);
  if (config.ROLE !== 'worker') {
    console.log(`  API        ${base}/v1`);
    console.log(`  API docs   ${base}/docs`);
    console.log(`  Dashboard  ${base}/dashboard`);
  }
  if (demo) {
    console.log(`\nCreated a demo business (tenant id ${demo.tenant_id}). Its sandbox keys, shown only now:`);
    console.log(`  secret key  ${demo.sandbox.secret_key}`);
    console.log(`  public key  ${demo.sandbox.public_key}`);
    if (demoLogin) console.log(`  dashboard   ${base}/dashboard/login as ${demoLogin.email} / ${demoLogin.password}`);
    console.log(`\nTry it:\n  curl -H "Api-Key: ${demo.sandbox.secret_key}" ${base}/v1/customers\n`);
  } else {
    console.log('\nKeys are shown only when created. New business: npm run --silent cli -- tenant create --name "Acme Ltd"');
    console.log('New keys for an existing one: npm run --silent cli -- keys rotate --tenant <id> --env sandbox\n');
  }
}

/** The graceful stop: HTTP and the workers drained together, then the database closed, under one deadline. */
function stopper(app: App, handle: Awaited<ReturnType<typeof openRuntime>>['handle'], workers: Workers | undefined) {
  let stopping = false;
  return async (signal: string) => {
    if (stopping) {
      app.log.warn({ signal }, 'second signal during shutdown: exiting now');
      process.exit(1);
    }
    stopping = true;
    let step = 'http and workers';
    const deadline = setTimeout(() => {
      // What it waited for: the requests still unanswered and the sockets still open.
      const inFlight = app.inFlight().slice(0, 20);
      app.server.getConnections((_err, connections) => {
        app.log.error(
          { signal, step, deadline_ms: SHUTDOWN_DEADLINE_MS, in_flight: inFlight, connections, pool: handle.poolStats?.() },
          'shutdown deadline passed: forcing exit',
        );
        process.exit(1);
      });
      setTimeout(() => process.exit(1), 200).unref();
    }, SHUTDOWN_DEADLINE_MS);
    app.log.info({ signal }, 'shutting down');
    const failed = (what: string) => (err: unknown) => app.log.error({ err }, `shutdown: ${what} failed`);
    await Promise.all([closeHttp(app, failed), stopWorkers(app, workers, failed)]);
    step = 'database';
    await handle.close().catch(failed('closing the database'));
    clearTimeout(deadline);
    app.log.info({ signal }, 'stopped');
    process.exit(0);
  };
}

// A worker tick waiting on the network (a webhook receiver that hangs) is not waited for
// longer than WORKER_DRAIN_MS: what it did not record is retried after the restart.
async function stopWorkers(app: App, workers: Workers | undefined, failed: Failed): Promise<void> {
  if (!workers) return;
  let timer: NodeJS.Timeout | undefined;
  const drained = await Promise.race([
    workers.stop().then(() => true, failed('stopping the workers')),
    new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), WORKER_DRAIN_MS))),
  ]);
  clearTimeout(timer);
  if (drained === false) app.log.warn({ after_ms: WORKER_DRAIN_MS }, 'shutdown: workers still busy, closing the database anyway');
}

/** The listener closed while requests in flight finish; idle and then busy connections closed. */
async function closeHttp(app: App, failed: Failed): Promise<void> {
  // The listener closes first (new connections are refused, idle keep-alive ones closed) while
  // requests in flight finish; the workers finish their current tick at the same time. A
  // keep-alive connection whose request was still running when the listener closed turns idle
  // only later, and the server would wait for its keep-alive timeout: close those as they idle.
  const closeIdle = setInterval(() => app.server.closeIdleConnections(), 100);
  // A connection still busy after HTTP_DRAIN_MS (a slow client, a request stuck on a lock) is
  // closed: its request was not acknowledged, and its Idempotency-Key makes the client's retry
  // safe whether or not its transaction committed.
  const closeBusy = setTimeout(() => {
    app.log.warn({ after_ms: HTTP_DRAIN_MS, in_flight: app.inFlight().slice(0, 20) }, 'shutdown: closing connections still busy');
    app.server.closeAllConnections();
  }, HTTP_DRAIN_MS);
  await app.close().catch(failed('closing the HTTP server'));
  clearInterval(closeIdle);
  clearTimeout(closeBusy);
}
