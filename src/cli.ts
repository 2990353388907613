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
import * as bank from './modules/bank-files/service.js';
import { bankDeps } from './workers/bank-files.js';
import { readFileSync } from 'node:fs';
import type { Sealer } from './lib/crypto.js';

/**
 * Operator command line. Same database configuration as the server (DATABASE_URL, or the
 * embedded database in DATA_DIR). Every command can print JSON with --json.
 */
type Command = (args: string[], handle: DatabaseHandle) => Promise<unknown>;

const USAGE = `Usage: npm run --silent cli -- <command> [options]

  tenant create --name NAME [--json]          create a business with sandbox and live key pairs
  tenant settings --tenant ID --set KEY=JSON  set a per-business setting (fees, limits, quotas)
  keys rotate --tenant ID --env sandbox|live [--expire-in 0|3600|86400|604800] [--json]
  kyc review --tenant ID --customer ID --outcome approved|rejected [--env live|sandbox] [--level basic|intermediate] [--json]
                                              decide a KYC case waiting in manual review (default --env live)
  dashboard-user create --tenant ID --email EMAIL [--json]
                                              a dashboard login for a business; the password is read
                                              from DASHBOARD_PASSWORD (never an argument: ps shows those)
  dashboard-user reset-link --email EMAIL [--json]
                                              print a one-time password reset link (valid 24 h; prefix it
                                              with the dashboard's origin); no mail is sent
  ops operators add --email EMAIL --role compliance|operations|admin|viewer [--json]
                                              an operator of the console at /ops: prints a one-time setup
                                              link (valid 24 h; prefix it with the server's origin)
  ops operators reset-link --email EMAIL [--json]
                                              a new setup link (the old password and second factor stop working)
  migrate                                     apply pending database migrations
  payouts settle|fail|return --transfer ID [--reason TEXT] [--json]
                                              record a live (manual connector) payout's result
  ledger reconcile [--tenant ID] [--json]     prove zero-sum per transaction and balance = sum of entries (exit 1 on a mismatch)
  bank connections add --config JSON|@FILE    add a sponsor bank connection (docs/going-live.md)
  bank connections list|enable|disable [--connection ID] [--json]
  bank exchange --connection ID [--json]      now: cut a pain.001 of waiting payouts, deliver it, import the inbox
  bank import --connection ID --file PATH [--json]
                                              import one pain.002 / camt.054 / camt.053 file
  bank files [--connection ID] [--json]       files sent and received
  bank exceptions [list] [--status open|assigned|returned] [--json]
  bank exceptions assign --exception ID --account ID [--note TEXT] [--json]
  bank exceptions return --exception ID [--note TEXT] [--json]
                                              book an unmatched credit to an account, or return it to the payer
  bank reconciliations [--connection ID] [--json]
                                              statements against the ledger (exit 1 when the newest disagrees)
`;

function fail(message: string): never {
  console.error(`${message}\n\n${USAGE}`);
  process.exit(2);
}

/**
 * Output waits until the database is closed (everything written is on disk): a command never
 * reports success for work that is not durable.
 */
const output: string[] = [];
function print(value: unknown, json: boolean, text: () => string) {
  output.push(json ? JSON.stringify(value) : text());
}

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
  'bank connections add': async (args, handle) => {
    const { values } = parseArgs({ args, options: { config: { type: 'string' }, json: { type: 'boolean' } } });
    if (!values.config) fail('bank connections add needs --config JSON (or @path/to/file.json)');
    let input: unknown;
    try {
      input = JSON.parse(values.config.startsWith('@') ? readFileSync(values.config.slice(1), 'utf8') : values.config);
    } catch {
      fail('--config must be JSON (or @FILE holding JSON)');
    }
    const c = await operatorCall(() => handle.db.transaction().execute((trx) => bank.addConnection(trx, input)));
    print(c, Boolean(values.json), () => `Bank connection ${c.id} (${c.name}, ${c.environment} ${c.currency}) added`);
  },
  'bank connections list': async (args, handle) => {
    const { values } = parseArgs({ args, options: { json: { type: 'boolean' } } });
    const list = await bank.listConnections(handle.db);
    print(
      list,
      Boolean(values.json),
      () =>
        list.map((c) => `${c.id}  ${c.status.padEnd(8)} ${c.environment} ${c.currency} ${c.name} via ${c.transport.type}`).join('\n') ||
        'No bank connections',
    );
  },
  'bank connections enable': (args, handle) => connectionStatus(args, handle, 'active'),
  'bank connections disable': (args, handle) => connectionStatus(args, handle, 'disabled'),
  'bank exchange': async (args, handle) => {
    const { values } = parseArgs({ args, options: { connection: { type: 'string' }, json: { type: 'boolean' } } });
    if (!values.connection) fail('bank exchange needs --connection ID');
    const id = values.connection;
    const result = await operatorCall(() => bank.exchange((work) => handle.db.transaction().execute(work), handle.db, id, cliBankDeps()));
    print(result, Boolean(values.json), () =>
      [
        result.cut.file ? `Cut ${result.cut.file.filename}` : 'No payouts waiting',
        ...result.cut.refused.map((r) => `Refused payout ${r.transfer_id}: ${r.reason}`),
        ...result.delivered.map((f) => `Delivered ${f}`),
        ...result.imported.map((f) => `Imported ${f.filename}${f.duplicate ? ' (already imported)' : ''}: ${JSON.stringify(f.counts)}`),
        ...result.rejected.map((f) => `REFUSED ${f.filename}: ${f.error}`),
      ].join('\n'),
    );
    if (result.rejected.length) process.exitCode = 1;
  },
  'bank import': async (args, handle) => {
    const { values } = parseArgs({
      args,
      options: { connection: { type: 'string' }, file: { type: 'string' }, json: { type: 'boolean' } },
    });
    if (!values.connection || !values.file) fail('bank import needs --connection ID and --file PATH');
    const { connection, file } = values;
    const content = readFileSync(file);
    const result = await operatorCall(() =>
      handle.db.transaction().execute((trx) => bank.importFile(trx, connection, file.split('/').pop()!, content, cliBankDeps())),
    );
    print(
      result,
      Boolean(values.json),
      () => `${result.kind} ${result.message_id}${result.duplicate ? ' was already imported' : `: ${JSON.stringify(result.counts)}`}`,
    );
  },
  'bank files': async (args, handle) => {
    const { values } = parseArgs({ args, options: { connection: { type: 'string' }, json: { type: 'boolean' } } });
    const files = await bank.listFiles(handle.db, values.connection);
    print(
      files,
      Boolean(values.json),
      () =>
        files
          .map(
            (f) => `${f.created_at}  ${f.direction.padEnd(3)} ${f.kind} ${f.status.padEnd(9)} ${f.filename} ${JSON.stringify(f.summary)}`,
          )
          .join('\n') || 'No files',
    );
  },
  'bank exceptions': (args, handle) => listBankExceptions(args, handle),
  'bank exceptions list': (args, handle) => listBankExceptions(args, handle),
  'bank exceptions assign': async (args, handle) => {
    const { values } = parseArgs({
      args,
      options: { exception: { type: 'string' }, account: { type: 'string' }, note: { type: 'string' }, json: { type: 'boolean' } },
    });
    if (!values.exception || !values.account) fail('bank exceptions assign needs --exception ID and --account ID');
    const { exception, account } = values;
    const e = await operatorCall(() =>
      handle.db.transaction().execute((trx) => bank.assignException(trx, exception, account, values.note ?? null, cliBankDeps())),
    );
    print(e, Boolean(values.json), () => `Exception ${e.id}: ${e.amount} ${e.currency} booked to account ${e.account_id}`);
  },
  'bank exceptions return': async (args, handle) => {
    const { values } = parseArgs({ args, options: { exception: { type: 'string' }, note: { type: 'string' }, json: { type: 'boolean' } } });
    if (!values.exception) fail('bank exceptions return needs --exception ID');
    const { exception } = values;
    const e = await operatorCall(() => handle.db.transaction().execute((trx) => bank.returnException(trx, exception, values.note ?? null)));
    print(e, Boolean(values.json), () => `Exception ${e.id}: ${e.amount} ${e.currency} marked returned to the sender`);
  },
  'bank reconciliations': async (args, handle) => {
    const { values } = parseArgs({ args, options: { connection: { type: 'string' }, json: { type: 'boolean' } } });
    const list = await bank.listReconciliations(handle.db, values.connection);
    print(
      list,
      Boolean(values.json),
      () =>
        list
          .map(
            (r) =>
              `${r.statement_date} ${r.statement_id}: bank ${r.bank_balance} ledger ${r.ledger_balance} ${r.currency} -> ${r.status.toUpperCase()} ${r.difference}`,
          )
          .join('\n') || 'No statements reconciled yet',
    );
    if (list[0]?.status === 'break') process.exitCode = 1;
  },
};

/** An operator command's refusal (AppError) is printed as the usage error it is, not a crash. */
async function operatorCall<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof AppError) {
      const details = err.details.map((d) => `  ${d.field}: ${d.message}`).join('\n');
      fail(`${err.message}${details ? `\n${details}` : ''}`);
    }
    throw err;
  }
}

/** The data key of this deployment (openRuntime), for commands that book through other modules. */
let runtimeSealer: Sealer | undefined;

function cliBankDeps() {
  const config = loadConfig(process.env, { LOG_LEVEL: 'silent' });
  return bankDeps(config, runtimeSealer!, { warn: (obj: unknown, msg?: string) => console.error(msg ?? '', JSON.stringify(obj)) } as never);
}

async function connectionStatus(args: string[], handle: DatabaseHandle, status: 'active' | 'disabled') {
  const { values } = parseArgs({ args, options: { connection: { type: 'string' }, json: { type: 'boolean' } } });
  if (!values.connection) fail('bank connections enable|disable needs --connection ID');
  const id = values.connection;
  const c = await operatorCall(() => handle.db.transaction().execute((trx) => bank.setConnectionStatus(trx, id, status)));
  print(c, Boolean(values.json), () => `Bank connection ${c.id} is ${c.status}`);
}

async function listBankExceptions(args: string[], handle: DatabaseHandle) {
  const { values } = parseArgs({
    args,
    options: { status: { type: 'string' }, connection: { type: 'string' }, json: { type: 'boolean' } },
  });
  const status = values.status as 'open' | 'assigned' | 'returned' | undefined;
  if (status && !['open', 'assigned', 'returned'].includes(status)) fail('--status must be open, assigned or returned');
  const list = await bank.listExceptions(handle.db, { connectionId: values.connection, status });
  print(
    list,
    Boolean(values.json),
    () =>
      list
        .map(
          (e) =>
            `${e.id}  ${e.status.padEnd(8)} ${e.direction} ${e.amount} ${e.currency} from ${e.payer_name ?? '?'} ref ${e.reference ?? '-'}: ${e.reason}`,
        )
        .join('\n') || 'No exceptions',
  );
}

async function payoutOutcome(args: string[], handle: DatabaseHandle, outcome: 'settled' | 'failed' | 'returned') {
  const { values } = parseArgs({ args, options: { transfer: { type: 'string' }, reason: { type: 'string' }, json: { type: 'boolean' } } });
  if (!values.transfer) fail('payouts settle|fail|return needs --transfer ID');
  const config = loadConfig(process.env, { LOG_LEVEL: 'silent' });
  const transferId = values.transfer;
  const reason = values.reason;
  const transfer = await handle.db.transaction().execute(async (trx) => {
    const result = await operatorOutcome(trx, config, transferId, outcome, reason?.trim() || null);
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
  runtimeSealer = sealer;
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
