import { buildApp } from './app.js';
import { loadConfig } from './config.js';
import { openRuntime } from './runtime.js';
import { countTenants, createTenant } from './modules/tenants/service.js';
import { startWorkers } from './workers/index.js';
import { addUser } from './dashboard/service.js';
import { randomBase62 } from './lib/crypto.js';

async function main() {
  const config = loadConfig();
  const { handle, sealer } = await openRuntime(config);

  let demo: Awaited<ReturnType<typeof createTenant>> | undefined;
  let demoLogin: { email: string; password: string } | undefined;
  if (config.DEMO_TENANT && (await countTenants(handle.db)) === 0) {
    demo = await createTenant(handle.db, 'Demo Business');
    demoLogin = { email: 'demo@example.com', password: randomBase62(16) };
    await addUser(handle.db, demo.tenant_id, demoLogin);
  }

  const app = await buildApp({ config, db: handle.db, dbKind: handle.kind, sealer });
  const workers = config.ROLE === 'api' ? undefined : startWorkers({ config, db: handle.db, dbKind: handle.kind, sealer, log: app.log });
  if (config.ROLE !== 'worker') await app.listen({ port: config.PORT, host: config.HOST });

  const scheme = config.TLS_CERT_FILE ? 'https' : 'http';
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  const base = `${scheme}://${config.HOST}:${port}`;
  const db = handle.kind === 'pglite' ? `embedded PGlite in ${config.DATA_DIR}` : 'PostgreSQL (DATABASE_URL)';
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

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down');
    await workers?.stop();
    await app.close();
    await handle.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
