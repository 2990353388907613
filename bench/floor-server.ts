/**
 * The floor of an HTTP service over PostgreSQL, for the tail references (bench/floor.ts): a bare
 * `node:http` server that answers each POST with pgbench's own TPC-B transaction, its statements
 * sent in one round trip, and the new balance as JSON. No framework, validation, idempotency or
 * ledger: what is left is the HTTP hop and Node.js beside PostgreSQL.
 *
 *   FLOOR_DATABASE_URL=<a database pgbench -i made> PORT=<port> node --import tsx bench/floor-server.ts
 */
import { createServer } from 'node:http';
import pg from 'pg';

const pool = new pg.Pool({ connectionString: process.env.FLOOR_DATABASE_URL, max: 16 });
const scale = Number(process.env.FLOOR_SCALE ?? 10);
const uniform = (n: number) => 1 + Math.floor(Math.random() * n);

/**
 * pgbench's built-in "TPC-B (sort of)" script, as `pgbench -s <scale>` runs it, sent as one simple
 * query (its numbers are made here, integers only): one round trip, so a transaction holds its
 * branch row (one of `scale`) only while PostgreSQL runs it. Sent a statement at a time, each
 * would hold it across six round trips of this process, and at half load the transactions would
 * queue on those rows: a tail of the floor's own, not the HTTP hop's (docs/benchmarks.md, "The
 * floor in one round trip").
 */
async function tpcb(): Promise<string> {
  const [aid, tid, bid] = [uniform(100_000 * scale), uniform(10 * scale), uniform(scale)];
  const delta = Math.floor(Math.random() * 10_001) - 5_000;
  const client = await pool.connect();
  try {
    const results = (await client.query(
      `begin;
      update pgbench_accounts set abalance = abalance + ${delta} where aid = ${aid};
      select abalance from pgbench_accounts where aid = ${aid};
      update pgbench_tellers set tbalance = tbalance + ${delta} where tid = ${tid};
      update pgbench_branches set bbalance = bbalance + ${delta} where bid = ${bid};
      insert into pgbench_history (tid, bid, aid, delta, mtime) values (${tid}, ${bid}, ${aid}, ${delta}, current_timestamp);
      commit`,
    )) as unknown as pg.QueryResult<{ abalance: number }>[];
    return String(results[2]!.rows[0]!.abalance);
  } catch (err) {
    // A statement that failed leaves the transaction open and aborted: end it before the connection goes back.
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
