/**
 * CPU of an account read's work in this process besides HTTP and the database, of two trees
 * side by side, alternating: the batched read (db/batcher.ts, Kysely's executor, the compiled
 * statement), the driver's parsing of what the read's columns need parsed, the answer built,
 * and its text written by the route's serializer. The database is a driver that answers at once
 * with the rows PostgreSQL would send (as text: pg's type parsers applied here, as pg does).
 *
 *   npx tsx bench/read-answer.ts [rounds] name=/path/to/worktree ...
 *   e.g. npx tsx bench/read-answer.ts 6 main=/work/wt/base branch=.
 *
 * Each round runs, for each tree in turn, 200 bursts of 16 concurrent reads of 16 accounts.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type CompiledQuery,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
} from 'kysely';
import pg from 'pg';

const TENANT = '0190e7a0-0000-7000-8000-00000000000a';
const ids = Array.from({ length: 16 }, (_, i) => `0190e7a0-0000-7000-8000-${String(i).padStart(12, '0')}`);

/** A row as PostgreSQL sends it in text, by column name. */
const textRow = (id: string): Record<string, string | null> => ({
  id,
  tenant_id: TENANT,
  environment: 'sandbox',
  customer_id: id.endsWith('1') ? null : '0190e7a0-0000-7000-8000-0000000000ff',
  currency: 'NGN',
  type: 'regular',
  label: 'Main account',
  status: 'active',
  category: 'general',
  account_number: '0123456789',
  bank_details:
    '{"account_number": "0123456789", "account_name": "Acme Ltd", "bank_name": "Wema Bank", "bank_code": "035", "country": "NG", "routing_number": null, "sort_code": null, "iban": null, "bic": null, "clabe": null, "branch_code": null}',
  metadata: '{"purpose": "operations", "owner": "finance"}',
  created_at: '2026-12-02 16:25:36.123456+00',
  updated_at: '2026-12-02 16:30:01.5+00',
  posted: '1234567',
  pending_debits: '5000',
});

const TYPES: Record<string, number> = {
  bank_details: 3802,
  metadata: 3802,
  created_at: 1184,
  updated_at: 1184,
  posted: 20,
  pending_debits: 20,
};
const parserOf = (column: string, sqlText: string): ((v: string) => unknown) => {
  // A column cast ::text in the statement comes as text, parsed by nothing.
  if (new RegExp(`${column}::text`).test(sqlText)) return (v) => v;
  const oid = TYPES[column];
  if (oid === 20) return (v) => BigInt(v);
  return oid ? pg.types.getTypeParser(oid, 'text') : (v) => v;
};

/** Answers every statement at once: the rows of the ids asked (its array parameter), the columns it names, parsed as pg would. */
class ImmediateDriver implements Driver {
  async init() {}
  async acquireConnection(): Promise<DatabaseConnection> {
    return {
      executeQuery: async <R>(query: CompiledQuery): Promise<QueryResult<R>> => {
        const asked = query.parameters.find(Array.isArray) as string[];
        const columns = [...query.sql.matchAll(/(?:"accounts"\."|"ledger_balances"\."|as ")(\w+)"/g)].map((m) => m[1]!);
        const all = query.sql.includes('"accounts".*') ? Object.keys(textRow(ids[0]!)) : [];
        const names = [...new Set([...all, ...columns].filter((c) => c in textRow(ids[0]!)))];
        const parsers = names.map((n) => parserOf(n, query.sql));
        const rows = asked.map((id) => {
          const raw = textRow(id);
          const row: Record<string, unknown> = {};
          names.forEach((n, i) => (row[n] = raw[n] === null ? null : parsers[i]!(raw[n]!)));
          return row as R;
        });
        return { rows };
      },
      streamQuery: () => {
        throw new Error('no streams');
      },
    };
  }
  async beginTransaction() {}
  async commitTransaction() {}
  async rollbackTransaction() {}
  async releaseConnection() {}
  async destroy() {}
}

interface Tree {
  name: string;
  read: () => Promise<unknown>;
  cpuMs: number;
  reads: number;
}

async function load(name: string, dir: string): Promise<Tree> {
  const src = (p: string) => import(pathToFileURL(resolve(dir, 'src', p)).href);
  const service = await src('modules/accounts/service.ts');
  const schema = await src('modules/accounts/schema.ts');
  const envelope = await src('http/envelope.ts');
  const serializer = await src('http/serializer.ts');
  const timestamps = await src('db/timestamp-text.ts').catch(() => null);
  const db = new Kysely<never>({
    dialect: {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => new ImmediateDriver(),
      createIntrospector: (k) => new PostgresIntrospector(k),
      createQueryCompiler: () => new PostgresQueryCompiler(),
    },
  });
  const reader = service.accountReader(db, {
    lanes: 4,
    maxBatch: 100,
    ...(timestamps ? { timestampText: timestamps.postgresTimestampText } : {}),
  });
  const write = serializer.serializerCompiler({
    schema: envelope.envelope(schema.AccountResponse),
    method: 'GET',
    url: '/',
    httpStatus: '200',
  });
  const ctx = { tenantId: TENANT, environment: 'sandbox', keyKind: 'secret', requestId: 'r', settings: {} };
  let text = '';
  const read = async () => {
    const answers = await Promise.all(ids.map((id) => reader(ctx, id)));
    for (const data of answers) text = write({ data, error: null });
    return text;
  };
  return { name, read, cpuMs: 0, reads: 0 };
}

const [roundsArg = '6', ...specs] = process.argv.slice(2);
const trees: Tree[] = [];
for (const spec of specs) trees.push(await load(spec.split('=')[0]!, spec.slice(spec.indexOf('=') + 1)));
const texts = await Promise.all(trees.map((t) => t.read()));
if (new Set(texts).size !== 1) throw new Error(`the trees answer differently:\n${texts.join('\n')}`);
for (const t of trees) for (let i = 0; i < 300; i++) await t.read(); // warm up
for (let round = 0; round < Number(roundsArg); round++) {
  const line: string[] = [];
  for (const t of [...trees.slice(round % trees.length), ...trees.slice(0, round % trees.length)]) {
    const at = process.cpuUsage();
    for (let i = 0; i < 200; i++) await t.read();
    const used = process.cpuUsage(at);
    const ms = (used.user + used.system) / 1000;
    t.cpuMs += ms;
    t.reads += 200 * ids.length;
    line.push(`${t.name} ${((ms * 1000) / (200 * ids.length)).toFixed(2)} µs`);
  }
  console.log(`round ${round}: ${line.join(', ')}`);
}
for (const t of trees) console.log(`${t.name}: ${((t.cpuMs * 1000) / t.reads).toFixed(2)} µs a read (${t.reads} reads)`);
