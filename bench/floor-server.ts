/**
 * The floor of an HTTP service over PostgreSQL, for the tail references (bench/floor.ts): a bare
 * `node:http` server that answers each POST with pgbench's own TPC-B transaction, its statements
 * sent one after another as pgbench sends them, and the new balance as JSON. No framework,
 * validation, idempotency or ledger: what is left is the HTTP hop and Node.js beside PostgreSQL.
 *
 *   FLOOR_DATABASE_URL=<a database pgbench -i made> PORT=<port> node --import tsx bench/floor-server.ts
 */
import { createServer } from 'node:http';
import pg from 'pg';

const pool = new pg.Pool({ connectionString: process.env.FLOOR_DATABASE_URL, max: 16 });
const scale = Number(process.env.FLOOR_SCALE ?? 10);
const uniform = (n: number) => 1 + Math.floor(Math.random() * n);

/** pgbench's built-in "TPC-B (sort of)" script, as `pgbench -s <scale>` runs it. */
async function tpcb(): Promise<string> {
  const [aid, tid, bid] = [uniform(100_000 * scale), uniform(10 * scale), uniform(scale)];
  const delta = Math.floor(Math.random() * 10_001) - 5_000;
  const client = await pool.connect();
  try {
    await client.query('begin');
    await client.query('update pgbench_accounts set abalance = abalance + $1 where aid = $2', [delta, aid]);
    const { rows } = await client.query<{ abalance: number }>('select abalance from pgbench_accounts where aid = $1', [aid]);
    await client.query('update pgbench_tellers set tbalance = tbalance + $1 where tid = $2', [delta, tid]);
    await client.query('update pgbench_branches set bbalance = bbalance + $1 where bid = $2', [delta, bid]);
    await client.query('insert into pgbench_history (tid, bid, aid, delta, mtime) values ($1, $2, $3, $4, current_timestamp)', [
      tid,
      bid,
      aid,
      delta,
    ]);
    await client.query('commit');
    return String(rows[0]!.abalance);
  } catch (err) {
    await client.query('rollback').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const answer = (status: number, text: string) => {
      response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      response.end(text);
    };
    let body: { amount?: unknown };
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { amount?: unknown };
    } catch {
      return answer(400, '{"data":null,"error":{"code":"invalid_json"}}');
    }
    tpcb().then(
      (balance) => answer(200, JSON.stringify({ data: { balance, amount: body.amount ?? null }, error: null })),
      () => answer(500, '{"data":null,"error":{"code":"internal"}}'),
    );
  });
}).listen(Number(process.env.PORT), '127.0.0.1', () => console.log('listening'));
