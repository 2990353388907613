import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';
import { loadConfig } from '../config.js';
import type { DatabaseHandle } from '../db/client.js';
import * as bank from '../modules/bank-files/service.js';
import { bankDeps } from '../workers/bank-files.js';
import { type Command, fail, operatorCall, print, runtime } from './output.js';

function cliBankDeps() {
  const config = loadConfig(process.env, { LOG_LEVEL: 'silent' });
  return bankDeps(config, runtime.sealer!, {
    warn: (obj: unknown, msg?: string) => console.error(msg ?? '', JSON.stringify(obj)),
  } as never);
}

/** The bank file commands: connections, the exchange, files, exceptions and reconciliations. */
export const bankCommands: Record<string, Command> = {
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
    const { values } = parseArgs({
      args,
      options: { exception: { type: 'string' }, note: { type: 'string' }, json: { type: 'boolean' } },
    });
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
