import { operatorResetLink } from './dashboard/team-service.js';
import { parseArgs } from 'node:util';
import { loadConfig } from './config.js';
import type { DatabaseHandle } from './db/client.js';
import { openDatabase } from './db/client.js';
import { DataDirLocked } from './db/data-dir-lock.js';
import { migrate } from './db/migrate.js';
import { openRuntime } from './runtime.js';
import { addUser, EmailTaken } from './dashboard/service.js';
import { reconcile } from './ledger/index.js';
import { operatorOutcome } from './modules/transfers/payout-operator.js';
import { createTenant, ENVIRONMENTS, rotateKeys, ROTATION_EXPIRY_SECONDS, setSettings } from './modules/tenants/service.js';
import type { Environment } from './core/context.js';
import { AppError } from './core/errors.js';
import { isUuid } from './lib/ids.js';
import { reviewCase } from './modules/kyc/service.js';
import { validateSetting } from './modules/approvals/service.js';
import { audit, createOperator, OperatorExists, resetOperator } from './ops/service.js';
import { findOperatorByEmail } from './ops/repo.js';
import { bankCommands } from './cli/bank-commands.js';
import { type Command, fail, output, print, runtime } from './cli/output.js';

/**
 * Operator command line. Same database configuration as the server (DATABASE_URL, or the
 * embedded database in DATA_DIR). Every command can print JSON with --json; the usage text
 * and the output helpers are in cli/output.ts, the bank file commands in cli/bank-commands.ts.
 */

const commands: Record<string, Command> = {
  'tenant create': async (args, handle) => {
    const { values } = parseArgs({ args, options: { name: { type: 'string' }, json: { type: 'boolean' } } });
    const name = values.name?.trim();
    if (!name) fail('tenant create needs --name');
    const tenant = await handle.db.transaction().execute((trx) => createTenant(trx, name));
    print(tenant, Boolean(values.json), () =>
      [
        `Created business "${name}" (tenant id ${tenant.tenant_id}). Secret keys are shown only now.`,
        ...ENVIRONMENTS.map((env) => `  ${env}: ${tenant[env].secret_key}  (public ${tenant[env].public_key})`),
      ].join('\n'),
    );
  },
  'tenant settings': async (args, handle) => {
    const { values } = parseArgs({
      args,
      options: { tenant: { type: 'string' }, set: { type: 'string', multiple: true }, json: { type: 'boolean' } },
    });
    if (!values.tenant || !values.set?.length) fail('tenant settings needs --tenant and at least one --set KEY=JSON');
    const patch: Record<string, unknown> = {};
    for (const pair of values.set) {
      const eq = pair.indexOf('=');
      if (eq < 1) fail(`--set ${pair}: use KEY=JSON`);
      try {
        patch[pair.slice(0, eq)] = JSON.parse(pair.slice(eq + 1));
      } catch {
        fail(`--set ${pair}: the value must be JSON (quote strings: key='"text"')`);
      }
    }
    if ('approvals' in patch) {
      try {
        validateSetting(patch.approvals);
      } catch (err) {
        fail(`--set approvals: ${err instanceof Error ? err.message : String(err)} (see docs/approvals.md)`);
      }
    }
    const settings = await setSettings(handle.db, values.tenant, patch);
    print(settings, Boolean(values.json), () => JSON.stringify(settings, null, 2));
  },
  'keys rotate': async (args, handle) => {
    const { values } = parseArgs({
      args,
      options: {
        tenant: { type: 'string' },
        env: { type: 'string' },
        'expire-in': { type: 'string', default: '0' },
        json: { type: 'boolean' },
      },
    });
    const env = values.env as Environment;
    const expireIn = Number(values['expire-in']);
    if (!values.tenant || !ENVIRONMENTS.includes(env)) fail('keys rotate needs --tenant and --env sandbox|live');
    if (!(ROTATION_EXPIRY_SECONDS as readonly number[]).includes(expireIn)) fail('--expire-in must be 0, 3600, 86400 or 604800');
    const tenant = values.tenant;
    const pair = await handle.db.transaction().execute((trx) => rotateKeys(trx, tenant, env, expireIn));
    print(
      pair,
      Boolean(values.json),
      () =>
        `New ${env} keys (shown only now):\n  secret ${pair.secret_key}\n  public ${pair.public_key}\nOld keys expire at ${pair.old_keys_expire_at}`,
    );
  },
  'ledger reconcile': async (args, handle) => {
    const { values } = parseArgs({ args, options: { tenant: { type: 'string' }, json: { type: 'boolean' } } });
    const report = await reconcile(handle.db, values.tenant);
    print(report, Boolean(values.json), () =>
      report.ok
        ? `Ledger reconciled: ${report.transactions_checked} transactions, ${report.accounts_checked} accounts, no mismatch`
        : `LEDGER MISMATCH\n${JSON.stringify(report, null, 2)}`,
    );
    if (!report.ok) process.exitCode = 1;
  },
  'kyc review': async (args, handle) => {
    const { values } = parseArgs({
      args,
      options: {
        tenant: { type: 'string' },
        customer: { type: 'string' },
        outcome: { type: 'string' },
        env: { type: 'string', default: 'live' },
        level: { type: 'string' },
        json: { type: 'boolean' },
      },
    });
    const env = values.env as Environment;
    const outcome = values.outcome;
    if (!values.tenant || !values.customer) fail('kyc review needs --tenant and --customer');
    if (outcome !== 'approved' && outcome !== 'rejected') fail('--outcome must be approved or rejected');
    if (!ENVIRONMENTS.includes(env)) fail('--env must be sandbox or live');
    if (values.level !== undefined && values.level !== 'basic' && values.level !== 'intermediate')
      fail('--level must be basic or intermediate');
    if (!isUuid(values.tenant) || !isUuid(values.customer)) fail('--tenant and --customer must be UUIDs');
    const { tenant, customer, level } = values;
    try {
      const status = await handle.db.transaction().execute(async (trx) => {
        const result = await reviewCase(trx, { tenantId: tenant, environment: env }, customer, outcome, level);
        await audit(
          trx,
          { operatorId: null, email: 'cli' },
          {
            action: `kyc.${outcome}`,
            targetType: 'kyc_case',
            targetId: result.applicant_id,
            tenantId: tenant,
            environment: env,
            detail: { customer_id: customer, level: result.kyc_level },
          },
        );
        return result;
      });
      print(status, Boolean(values.json), () => `KYC ${status.kyc_level} of customer ${values.customer}: ${outcome}`);
    } catch (err) {
      if (err instanceof AppError) fail(`kyc review: ${err.message}`);
      throw err;
    }
  },
  'payouts settle': (args, handle) => payoutOutcome(args, handle, 'settled'),
  'payouts fail': (args, handle) => payoutOutcome(args, handle, 'failed'),
  'payouts return': (args, handle) => payoutOutcome(args, handle, 'returned'),
  'dashboard-user create': async (args, handle) => {
    const { values } = parseArgs({ args, options: { tenant: { type: 'string' }, email: { type: 'string' }, json: { type: 'boolean' } } });
    const password = process.env.DASHBOARD_PASSWORD ?? '';
    if (!values.tenant || !values.email) fail('dashboard-user create needs --tenant and --email');
    if (password.length < 12) fail('Set DASHBOARD_PASSWORD to a password of at least 12 characters');
    const user = await addUser(handle.db, values.tenant, { email: values.email, password }).catch((err: unknown) => {
      if (err instanceof EmailTaken) fail('A dashboard user with this email already exists');
      throw err;
    });
    print(user, Boolean(values.json), () => `Dashboard user ${user.email} can now log in at /dashboard/login`);
  },
  'dashboard-user reset-link': async (args, handle) => {
    const { values } = parseArgs({ args, options: { email: { type: 'string' }, json: { type: 'boolean' } } });
    if (!values.email) fail('dashboard-user reset-link needs --email');
    const path = await operatorResetLink(handle.db, values.email).catch((err: unknown) =>
      fail(err instanceof Error ? err.message : String(err)),
    );
    print({ email: values.email, path }, Boolean(values.json), () => `Password reset link (works once, for 24 hours): ${path}`);
  },
  'ops operators': async (args, handle) => {
    const [sub, ...rest] = args;
    const { values } = parseArgs({
      args: rest,
      options: { email: { type: 'string' }, role: { type: 'string' }, json: { type: 'boolean' } },
    });
    if (!values.email) fail('ops operators add|reset-link needs --email');
    const email = values.email;
    if (sub === 'add') {
      if (!values.role) fail('ops operators add needs --role compliance|operations|admin|viewer');
      const role = values.role;
      const created = await handle.db
        .transaction()
        .execute((trx) => createOperator(trx, { operatorId: null, email: 'cli' }, email, role))
        .catch((err: unknown) => {
          if (err instanceof OperatorExists) fail('An operator with this email already exists (ops operators reset-link gives a new link)');
          if (err instanceof AppError) fail(`ops operators add: ${err.message}`);
          throw err;
        });
      print(created, Boolean(values.json), () =>
        [`Operator ${created.email} (${created.role}) created.`, `One-time setup link (valid 24 hours): ${created.setupPath}`].join('\n'),
      );
      return;
    }
    if (sub !== 'reset-link') fail('ops operators: use add or reset-link');
    const op = await findOperatorByEmail(handle.db, email.trim().toLowerCase());
    if (!op) fail('No operator with this email');
    const done = await handle.db.transaction().execute((trx) => resetOperator(trx, { operatorId: null, email: 'cli' }, op.id));
    print(done, Boolean(values.json), () => `One-time setup link for ${done.email} (valid 24 hours): ${done.setupPath}`);
  },
  migrate: async () => undefined,
  ...bankCommands,
};

async function payoutOutcome(args: string[], handle: DatabaseHandle, outcome: 'settled' | 'failed' | 'returned') {
  const { values } = parseArgs({ args, options: { transfer: { type: 'string' }, reason: { type: 'string' }, json: { type: 'boolean' } } });
  if (!values.transfer) fail('payouts settle|fail|return needs --transfer ID');
  const config = loadConfig(process.env, { LOG_LEVEL: 'silent' });
  const transferId = values.transfer;
  const reason = values.reason;
  const transfer = await handle.db.transaction().execute(async (trx) => {
    const result = await operatorOutcome(trx, transferId, outcome, reason?.trim() || null, config);
    await audit(
      trx,
      { operatorId: null, email: 'cli' },
      {
        action: `payout.${outcome}`,
        targetType: 'transfer',
        targetId: result.id,
        reason: reason?.trim() || null,
        detail: { transfer_status: result.transfer_status },
      },
    );
    return result;
  });
  print(transfer, Boolean(values.json), () => `Transfer ${transfer.id} is now ${transfer.transfer_status}`);
}

async function main() {
  const argv = process.argv.slice(2);
  const name = [`${argv[0]} ${argv[1]} ${argv[2]}`, `${argv[0]} ${argv[1]}`, argv[0]].find((n) => n && n in commands);
  if (!name) fail(argv.length ? `Unknown command: ${argv.join(' ')}` : 'No command given');
  const rest = argv.slice(name.split(' ').length);
  const config = loadConfig(process.env, { LOG_LEVEL: 'silent' });
  if (name === 'migrate') {
    const handle = await openDatabase(config);
    const applied = await migrate(handle).finally(() => handle.close());
    console.log(applied.length ? `Applied: ${applied.join(', ')}` : 'Database is up to date');
    return;
  }
  const { handle, sealer } = await openRuntime(config);
  runtime.sealer = sealer;
  try {
    await commands[name]!(rest, handle);
  } finally {
    await handle.close();
  }
  for (const line of output) console.log(line);
}

main().catch((err: unknown) => {
  if (err instanceof DataDirLocked) {
    // The embedded database is one process at a time: the CLI does not go around the server.
    const pid = err.holder.pid;
    console.error(
      `${err.message}\n\nStop the server first (kill -TERM ${pid}), run this command, then start the server again. ` +
        'To use the CLI while the server runs, run both on PostgreSQL (DATABASE_URL).',
    );
  } else {
    console.error(err instanceof Error ? err.message : err);
  }
  process.exit(1);
});
