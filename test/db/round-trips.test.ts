import { createServer, connect, Socket, type Server } from 'node:net';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgres, type DatabaseHandle } from '../../src/db/client.js';
import { newId } from '../../src/lib/ids.js';
import { createTenant } from '../../src/modules/tenants/service.js';
import { appOnDatabase, cloneTemplateDatabase, johnDoe } from '../harness.js';

/**
 * Round trips to PostgreSQL, counted on the wire: a proxy between the app and the server counts
 * the client's turns (it sends, then waits for an answer before it sends again). Bytes from the
 * client reach the server 20 ms late, so statements the client writes one after the other without
 * waiting for an answer are one turn, as they are for PostgreSQL. Not counted: a connection's
 * start-up and the process heartbeat (db/instance.ts, by its text or, once prepared, by its
 * statement's name), which run beside any unit of work. PGlite
 * has no wire: PostgreSQL only.
 */
function turnCounter(target: { host: string; port: number }) {
  const state = { turns: 0 };
  /** Per connection (the app side's port): the names its heartbeat statement was prepared under. */
  const heartbeats = new Map<number, Set<string>>();
  /** Whether what the app sent on the connection from `port` is the process heartbeat (db/instance.ts). */
  const isHeartbeat = (port: number, text: string) => {
    const names = heartbeats.get(port) ?? new Set<string>();
    heartbeats.set(port, names);
    const parsed = /P[\s\S]{4}([a-z_0-9]+)\0insert into process_instances/.exec(text);
    if (parsed) names.add(parsed[1]!);
    const bound = /^B[\s\S]{4}\0([a-z_0-9]+)\0/.exec(text);
    return text.includes('insert into process_instances') || (bound !== null && names.has(bound[1]!));
  };
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(target.port, target.host);
    sockets.add(client).add(upstream);
    let clientSpokeLast = false;
    let started = false;
    client.on('data', (chunk) => {
      const counted = started && !isHeartbeat(client.remotePort!, chunk.toString('latin1'));
      started = true;
      if (!clientSpokeLast && counted) state.turns++;
      clientSpokeLast = true;
      setTimeout(() => upstream.write(chunk), 20);
    });
    upstream.on('data', (chunk) => {
      clientSpokeLast = false;
      client.write(chunk);
    });
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
  });
  return {
    state,
    isHeartbeat,
    listen: () =>
      new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port))),
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const url = process.env.DATABASE_URL;

describe.skipIf(!url)('round trips on the wire (PostgreSQL)', () => {
  let clone: { url: string; drop: () => Promise<void> };
  let proxy: ReturnType<typeof turnCounter>;
  let handle: DatabaseHandle;
  let proxyPort: number;

  beforeAll(async () => {
    clone = await cloneTemplateDatabase(url!);
    const direct = new URL(clone.url);
    proxy = turnCounter({ host: direct.hostname, port: Number(direct.port || 5432) });
    const proxied = new URL(clone.url);
    proxyPort = await proxy.listen();
    proxied.host = `127.0.0.1:${proxyPort}`;
    // LISTEN goes direct: its heartbeat is no unit's round trip.
    handle = openPostgres(proxied.toString(), 4, clone.url);
  });
  afterAll(async () => {
    await handle?.close();
    await proxy?.close();
    await clone?.drop();
  });

  /**
   * Turns taken by `work` on a connection that is already open: the fewest of three runs. A stall
   * of this process longer than the proxy's delay (a loaded CI machine) lets the proxy see the
   * answer to a statement before the next one the client sent without waiting for it, and count
   * a turn too many; it never counts one too few.
   */
  async function turnsOf(work: () => Promise<unknown>): Promise<number> {
    let fewest = Infinity;
    for (let run = 0; run < 3; run++) {
      const before = proxy.state.turns;
      await work();
      fewest = Math.min(fewest, proxy.state.turns - before);
    }
    return fewest;
  }

  it('a transaction sends BEGIN with its first statement: one statement and COMMIT are two round trips', async () => {
    await sql`select 1`.execute(handle.db); // the connection is open
    expect(await turnsOf(() => handle.db.transaction().execute((trx) => sql`select 1`.execute(trx)))).toBe(2);
    expect(await turnsOf(() => handle.db.transaction().execute(async () => {}))).toBe(1);
  });

  /** Writes the app's connections hand the kernel during `work` (a corked stream's buffered chunks go as one _writev). */
  async function writesOf(work: () => Promise<unknown>): Promise<number> {
    let writes = 0;
    const proto = Socket.prototype as unknown as Record<'_write' | '_writev', (...a: unknown[]) => unknown>;
    const originals = { _write: proto._write, _writev: proto._writev };
    for (const k of ['_write', '_writev'] as const)
      proto[k] = function (this: Socket, ...a: unknown[]) {
        const chunks = k === '_writev' ? (a[0] as { chunk: Buffer | string }[]).map((c) => c.chunk) : [a[0] as Buffer | string];
        const text = chunks.map((c) => (typeof c === 'string' ? c : c.toString('latin1'))).join('');
        if (this.remotePort === proxyPort && !proxy.isHeartbeat(this.localPort!, text)) writes++;
        return originals[k].apply(this, a);
      };
    try {
      await work();
    } finally {
      Object.assign(proto, originals);
    }
    return writes;
  }

  it('BEGIN leaves in one write with the first statement: one system call and one wake-up of the server', async () => {
    await sql`select 1`.execute(handle.db); // the connection is open
    // BEGIN with the statement, then COMMIT
    expect(await writesOf(() => handle.db.transaction().execute((trx) => sql`select 1`.execute(trx)))).toBe(2);
  });

  it('a failed statement after BEGIN fails the transaction, which leaves nothing behind', async () => {
    await sql`create table if not exists rt_probe (n int primary key)`.execute(handle.db);
    await expect(
      handle.db.transaction().execute(async (trx) => {
        await sql`insert into rt_probe values (1)`.execute(trx);
        await sql`insert into rt_probe values (1)`.execute(trx);
      }),
    ).rejects.toMatchObject({ code: '23505' });
    expect((await sql<{ n: number }>`select count(*)::int as n from rt_probe`.execute(handle.db)).rows[0]!.n).toBe(0);
  });

  /** The app on the counted connection, a business of its own, and a POST with a fresh Idempotency-Key. */
  async function appOnTheWire(name: string) {
    // As in production: with a live change feed the key cache keeps its entries (without one, half
    // a second), so a slow machine's request does not look its key up again.
    const app = await appOnDatabase(handle.db, 'postgres', { REQUEST_LOG: 'off' }, { changes: handle.changes });
    const key = (await handle.db.transaction().execute((trx) => createTenant(trx, name))).sandbox.secret_key;
    const post = async (path: string, body: unknown) => {
      const res = await app.inject({
        method: 'POST',
        url: path,
        headers: { 'api-key': key, 'content-type': 'application/json', 'idempotency-key': newId() },
        payload: JSON.stringify(body),
      });
      expect(res.statusCode, res.body).toBe(200);
      return (res.json() as { data: Record<string, string> & { id: string } }).data;
    };
    /** Waits for the change feed: the key stays cached under its lifetime from then on. */
    const feedLive = async () => {
      for (let i = 0; i < 100 && !handle.changes!.live; i++) await new Promise((r) => setTimeout(r, 50));
      expect(handle.changes!.live).toBe(true);
    };
    return { app, post, feedLive };
  }

  // What a batch locks after its accounts leaves with them once the process knows the sources and
  // no fee applies (transfers/batch.ts, planFirstLocks), and all of it right behind the claim
  // (http/idempotency-batch.ts); a business's transfer was four round trips, then three.
  it('a batch of transfers, or of FX market orders, is two round trips: BEGIN with the claim and the first locks, the writes with COMMIT', async () => {
    const { app, post, feedLive } = await appOnTheWire('Wire Ltd');
    try {
      const from = (await post('/v1/accounts', { currency: 'NGN', label: 'from' })).id;
      const to = (await post('/v1/accounts', { currency: 'NGN', label: 'to' })).id;
      await post(`/v1/simulations/accounts/${from}/fund`, { amount: '10.00' });
      const transfer = () =>
        post('/v1/transfers', { source: { id: from }, destination: { destination_type: 'internal_account', id: to }, amount: '1.00' });
      await transfer(); // the key and the process are known from here on
      await feedLive();
      await transfer(); // the key is cached under the live feed's lifetime from here on
      expect(await turnsOf(transfer)).toBe(2);
      // The statements of a turn leave in one write: BEGIN with the claim, the accounts and the
      // balance rows (three writes until they were corked together); the writes; COMMIT.
      expect(await writesOf(transfer)).toBe(3);

      // A customer's transfer also reads the KYC levels, takes the spending lock and reads the day's
      // counter: those leave with the accounts too once the source is known (seven turns before).
      const customer = (await post('/v1/customers', johnDoe())).id;
      await post(`/v1/simulations/kyc/${customer}`, { outcome: 'approved', level: 'basic' });
      const own = (await post('/v1/accounts', { currency: 'NGN', label: 'own', customer_id: customer })).id;
      await post(`/v1/simulations/accounts/${own}/fund`, { amount: '10.00' });
      const spend = () =>
        post('/v1/transfers', { source: { id: own }, destination: { destination_type: 'internal_account', id: to }, amount: '1.00' });
      await spend(); // the source is known from here on
      expect(await turnsOf(spend)).toBe(2);
      // The claim, accounts, KYC levels, spending lock, counter and balance rows in one write (six before).
      expect(await writesOf(spend)).toBe(3);
      // An FX market order naming its accounts: the rates, accounts, fx_position accounts and
      // balance rows leave with the claim (planFirstLocks in fx/batch.ts; seven turns before).
      const usd = (await post('/v1/accounts', { currency: 'USD', label: 'usd' })).id;
      await post('/v1/simulations/fx/rates', { base: 'USD', quote: 'NGN', rate: '1500' });
      await post(`/v1/simulations/accounts/${from}/fund`, { amount: '100000.00' });
      const order = () =>
        post('/v1/fx/orders', {
          order_type: 'market',
          side: 'sell',
          pair: { base: 'NGN', quote: 'USD' },
          amount: '150.00',
          source_id: from,
          destination_id: usd,
        });
      await order(); // the first creates the fx_position accounts
      expect(await turnsOf(order)).toBe(2);
      expect(await writesOf(order)).toBe(3);
    } finally {
      await app.close();
    }
  });

  // A card withdrawal that names its account: the card, the account (share) and both balance rows
  // leave with the claim (cards/withdrawals.ts planWithdrawalReads). Before it took the batch path
  // (http/idempotency.ts, every statement after the answer to the one before) it was nine.
  it('a card withdrawal naming its account is two round trips: BEGIN with the claim and its reads, the writes with COMMIT', async () => {
    const { app, post, feedLive } = await appOnTheWire('Withdraw Wire Ltd');
    try {
      const customer = (await post('/v1/customers', johnDoe())).id;
      await post(`/v1/simulations/kyc/${customer}`, { outcome: 'approved', level: 'basic' });
      await post('/v1/risk/features/activate', {
        feature_id: 'virtual_cards',
        customer_id: customer,
        provider_data: { annual_remuneration: 12000, estimated_monthly_limit: '200.50', ip_address: '12.23.31.23' },
      });
      const account = (await post('/v1/accounts', { currency: 'USD', label: 'main', customer_id: customer })).id;
      await post(`/v1/simulations/accounts/${account}/fund`, { amount: '100.00' });
      const card = (await post('/v1/cards', { customer_id: customer, card_type: 'virtual', card_limit: 1000, name_on_card: 'John Doe' }))
        .card as unknown as { id: string };
      await post('/v1/transfers', { source: { id: account }, destination: { destination_type: 'card', id: card.id }, amount: '50.00' });
      const withdraw = () => post('/v1/cards/withdraw', { card_id: card.id, amount: '1.00', account_id: account });
      await withdraw();
      await feedLive();
      await withdraw();
      expect(await turnsOf(withdraw)).toBe(2);
    } finally {
      await app.close();
    }
  });

  // A sandbox collection simulation names its collection: the collection's lock leaves with the claim
  // (collections/lifecycle.ts planSimulationLocks); it was a round trip of its own after it.
  // Then the destination account (share), the business's settings, its fee and settlement accounts,
  // the balance rows, and the writes with COMMIT.
  it('a collection simulation locks its collection with the claim: seven round trips, not eight', async () => {
    const { app, post, feedLive } = await appOnTheWire('Simulation Wire Ltd');
    try {
      const customer = (await post('/v1/customers', johnDoe())).id;
      const dest = (await post('/v1/accounts', { currency: 'USD', label: 'sales', customer_id: customer })).id;
      const collection = async () =>
        (
          await post('/v1/collections', {
            amount: '10.00',
            currency: 'USD',
            country: 'NG',
            customer_id: customer,
            source: { source_type: 'external', methods: ['card'] },
            destination: { destination_type: 'internal_account', id: dest },
          })
        ).id;
      const complete = async (id: string) =>
        expect((await post(`/v1/simulations/collections/${id}/complete`, {})).status).toBe('completed');
      await complete(await collection()); // the first creates the fee and settlement accounts
      await feedLive();
      // Only the simulations are counted: their collections are made first, one for each of turnsOf's runs.
      const ids = [await collection(), await collection(), await collection()];
      expect(await turnsOf(() => complete(ids.shift()!))).toBe(7);
    } finally {
      await app.close();
    }
  });

  // A card charge's payment intent and saved card are named by the request: both leave with the
  // claim (collections/cards.ts planChargeReads); they were two round trips of their own after it.
  // Then what needs the intent's row (its destination account, the business's fee and settlement
  // accounts, the balance rows), and the writes with COMMIT.
  it('a card charge reads its payment intent and saved card with the claim: five round trips, not seven', async () => {
    const { app, post, feedLive } = await appOnTheWire('Charge Wire Ltd');
    try {
      const customer = (await post('/v1/customers', johnDoe())).id;
      const dest = (await post('/v1/accounts', { currency: 'USD', label: 'card sales' })).id;
      const token = (
        await post('/v1/simulations/card-tokens', { card_number: '4242424242424242', expiry: '12/30', cvv: '999', customer_id: customer })
      ).card_token!;
      const intent = async () =>
        (
          await post('/v1/collections/cards/payment-intents', {
            customer_id: customer,
            amount: '2.00',
            currency: 'USD',
            destination: { destination_type: 'internal_account', id: dest },
            source: { source_type: 'external', methods: ['card'] },
          })
        ).intent_id!;
      const charge = async (paymentIntentId: string) => {
        const charged = await post('/v1/collections/cards/payment-intents/charge', {
          payment_intent_id: paymentIntentId,
          card_token: token,
        });
        expect(charged.status).toBe('succeeded');
      };
      await charge(await intent()); // the first creates the fee and settlement accounts
      await feedLive();
      // Only the charges are counted: their intents are made first, one for each of turnsOf's runs.
      const intents = [await intent(), await intent(), await intent()];
      expect(await turnsOf(() => charge(intents.shift()!))).toBe(5);
    } finally {
      await app.close();
    }
  });
});
