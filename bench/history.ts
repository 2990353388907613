import { sql } from 'kysely';
import type { Db } from '../src/db/client.js';
import type { LoadResult } from './load.js';
import { loadsInTurns, TURN_ROUNDS } from './turns.js';

/**
 * Gives the business a history of `entries` ledger entries (entries / 2 completed internal
 * transfers among `accountIds`, spread over the 30 days before now) with SQL generate_series,
 * as the API would have written it: ledger transactions and entries, balances moved by the net
 * of each account, the transfers, both sides' account transactions, and the outbox events
 * (already fanned out). Ids are UUIDv7 of their time, so indexes see history in id order.
 * Balanced and reconciling: each transfer's two entries sum to zero and every balance moves by
 * exactly the sum of its new entries (balance_after is the running sum from the balance at
 * seeding time). PostgreSQL only (one statement per step, so it is also PGlite-shaped).
 */
export async function seedHistory(db: Db, scope: { tenantId: string; environment: string }, accountIds: string[], entries: number) {
  const transfers = Math.floor(entries / 2);
  const { tenantId: t, environment: env } = scope;
  const now = Date.now();
  const start = now - 30 * 86_400_000;
  const step = Math.max(1, Math.floor((now - 3_600_000 - start) / transfers));
  await db.transaction().execute(async (trx) => {
    await sql`set local synchronous_commit = off`.execute(trx);
    // UUIDv7: 48 bits of milliseconds, version 7, 12 pseudo-random bits, variant 10, 62 more bits.
    await sql`create or replace function pg_temp.bench_uuid7(ms bigint, salt text) returns uuid language sql immutable as
      $$ select (lpad(to_hex(ms), 12, '0') || '7' || substr(h, 1, 3) || '8' || substr(h, 4, 15))::uuid
         from (select md5(salt) as h) s $$`.execute(trx);
    await sql`create temp table bench_seed on commit drop as
      select g, ts, src, dst, amount,
        pg_temp.bench_uuid7(ms, 'l' || g) as ledger_tx, pg_temp.bench_uuid7(ms, 't' || g) as transfer,
        pg_temp.bench_uuid7(ms, 'd' || g) as debit_entry, pg_temp.bench_uuid7(ms, 'c' || g) as credit_entry,
        pg_temp.bench_uuid7(ms, 'o' || g) as out_tx, pg_temp.bench_uuid7(ms, 'i' || g) as in_tx,
        pg_temp.bench_uuid7(ms, 'e' || g) as event
      from (
        select g, ms, to_timestamp(ms / 1000.0) as ts, (100 + g % 900)::bigint as amount,
          ids[1 + g % n] as src, ids[1 + (g % n + 1 + (g / n) % (n - 1)) % n] as dst
        from generate_series(0, ${transfers - 1}::bigint) g,
          lateral (select (${start}::bigint + (g * ${step})::bigint) as ms) m,
          (select ${accountIds}::uuid[] as ids, ${accountIds.length}::bigint as n) a
      ) s`.execute(trx);
    await sql`insert into ledger_transactions (id, tenant_id, environment, kind, reference, metadata, created_at)
      select ledger_tx, ${t}, ${env}, 'internal_transfer', transfer::text, jsonb_build_object('transfer_id', transfer), ts
      from bench_seed`.execute(trx);
    await sql`create temp table bench_legs on commit drop as
      select debit_entry as id, ledger_tx, src as account_id, -amount as amount, ts, out_tx as account_tx from bench_seed
      union all
      select credit_entry, ledger_tx, dst, amount, ts, in_tx from bench_seed`.execute(trx);
    await sql`create temp table bench_entries on commit drop as
      select l.*, b.posted + sum(l.amount) over (partition by l.account_id order by l.id) as balance_after
      from bench_legs l join ledger_balances b on b.account_id = l.account_id`.execute(trx);
    await sql`insert into ledger_entries (id, tenant_id, environment, transaction_id, account_id, currency, amount, balance_after, created_at)
      select id, ${t}, ${env}, ledger_tx, account_id, 'NGN', amount, balance_after, ts from bench_entries`.execute(trx);
    await sql`update ledger_balances b set posted = b.posted + d.net
      from (select account_id, sum(amount) as net from bench_legs group by account_id) d
      where b.account_id = d.account_id`.execute(trx);
    await sql`insert into transfers (id, tenant_id, environment, description, source_type, source_id,
        destination_type, destination_id, currency, amount, status, ledger_transaction_id, transaction_id, created_at, updated_at)
      select transfer, ${t}, ${env}, '', 'internal_account', src, 'internal_account', dst, 'NGN', amount,
        'completed', ledger_tx, out_tx, ts, ts
      from bench_seed`.execute(trx);
    await sql`insert into transactions (id, tenant_id, environment, account_id, ledger_transaction_id, reference, direction,
        currency, amount, balance_before, balance_after, channel, transaction_type, status, sending_account_id,
        receiving_account_id, created_at, updated_at)
      select e.account_tx, ${t}, ${env}, e.account_id, e.ledger_tx, s.transfer::text,
        case when e.amount < 0 then 'out' else 'in' end, 'NGN', abs(e.amount), e.balance_after - e.amount, e.balance_after,
        'internal', 'internal_transfer', 'completed', s.src, s.dst, e.ts, e.ts
      from bench_entries e join bench_seed s on s.ledger_tx = e.ledger_tx`.execute(trx);
    await sql`insert into events (id, tenant_id, environment, event_type, event_category, event_group_id, event_data, occurred_at, created_at)
      select event, ${t}, ${env}, 'transfer.status.completed', 'transfer', transfer::text,
        jsonb_build_object('id', transfer, 'status', 'completed', 'amount', amount), ts, ts
      from bench_seed`.execute(trx);
    // Past events, fanned out long ago: off the queue the insert's trigger put them on.
    await sql`delete from event_fanout_queue q using bench_seed s where q.event_id = s.event`.execute(trx);
  });
  await sql`analyze`.execute(db);
}

/**
 * The history figure in turns (bench/turns.ts): the empty ledger's server and the seeded ledger's
 * take turns, which one goes first alternating.
 */
export async function historyInTurns<App>(
  load: (app: App, seconds: number) => Promise<LoadResult>,
  apps: { empty: App; full: App },
  seconds: number,
  log: (line: string) => void,
): Promise<{ rounds: number; empty: LoadResult; full: LoadResult }> {
  return loadsInTurns(load, apps, ['empty', 'full'], seconds, (round, last) =>
    log(
      `history in turns, round ${round} of ${TURN_ROUNDS}: empty ledger ${Math.round(last.empty.perSecond)}/s, with history ${Math.round(last.full.perSecond)}/s`,
    ),
  );
}
