import { randomUUID } from 'node:crypto';
import { listInstitutions } from '../../src/lib/institutions.js';
import { nubans, remitter } from '../payout-fixtures.js';

/**
 * A client of several API processes. Every logical request has one Idempotency-Key and is
 * driven to a final answer: a timeout, a refused or reset connection, or "still in progress"
 * sends the same request again to the other process.
 */
export interface Answer {
  status: number;
  body: any;
  attempts: number;
  /** Whether some attempt went to another process than the first. */
  crossed: boolean;
}

export interface Stats {
  requests: number;
  retries: number;
  crossed: number;
  networkErrors: number;
  inProgress: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class MultiClient {
  readonly stats: Stats = { requests: 0, retries: 0, crossed: 0, networkErrors: 0, inProgress: 0 };

  constructor(
    private readonly bases: string[],
    private readonly key: string,
    /** Share of first attempts cut short by a client timeout (1–30 ms), so a retry follows. */
    private readonly timeoutShare = 0.25,
  ) {}

  async send(method: 'GET' | 'POST', path: string, body?: unknown, options: { first?: number } = {}): Promise<Answer> {
    const idempotencyKey = randomUUID();
    const first = options.first ?? Math.floor(Math.random() * this.bases.length);
    let target = first;
    let crossed = false;
    const cutShort = method === 'POST' && Math.random() < this.timeoutShare;
    this.stats.requests++;
    for (let attempt = 1; attempt <= 400; attempt++) {
      if (attempt > 1) this.stats.retries++;
      const timeout = attempt === 1 && cutShort ? 1 + Math.floor(Math.random() * 30) : 15_000;
      try {
        const res = await fetch(`${this.bases[target]}${path}`, {
          method,
          headers: {
            'api-key': this.key,
            ...(method === 'POST' ? { 'idempotency-key': idempotencyKey } : {}),
            ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
          },
          ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
          signal: AbortSignal.timeout(timeout),
        });
        const text = await res.text();
        const parsed = text ? JSON.parse(text) : undefined;
        if (res.status === 409 && parsed?.error?.code === 'idempotency_request_in_progress') {
          this.stats.inProgress++;
          await sleep(20);
        } else if (res.status === 503) {
          await sleep(50);
        } else {
          if (crossed) this.stats.crossed++;
          return { status: res.status, body: parsed, attempts: attempt, crossed };
        }
      } catch {
        this.stats.networkErrors++;
        await sleep(5);
      }
      // The next attempt goes to the other process (a client behind a load balancer would).
      target = (target + 1) % this.bases.length;
      if (target !== first) crossed = true;
    }
    throw new Error(`${method} ${path}: no final answer after 400 attempts`);
  }

  async ok(method: 'GET' | 'POST', path: string, body?: unknown): Promise<any> {
    const res = await this.send(method, path, body);
    if (res.status >= 300) throw new Error(`${method} ${path} -> ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.data;
  }
}

const gtb = listInstitutions({ country: 'NG', type: 'bank' }).find((i) => i.code === '058')!;
const nuban = nubans(300000 + Math.floor(Math.random() * 100000));

export function customerBody(tag: string) {
  return {
    first_name: 'John',
    last_name: 'Doe',
    email: `john.doe+${tag}@example.com`,
    phone: '+2348012345678',
    type: 'individual',
    gender: 'male',
    date_of_birth: '1990-01-15',
    address: { address_line1: '12 Marina Road', city: 'Lagos', country: 'NG', postal_code: '101001', state: 'NG-LA' },
  };
}

export interface Fixture {
  business: string[];
  customer: string;
  customerNgn: string;
  payees: string[];
  card: string;
  fxUsd: string;
  fxNgn: string;
  fxCustomer: string;
}

/** Accounts with money, verified payees, a funded card, FX accounts: all over the API. */
export async function setUp(c: MultiClient, receiverUrl: string): Promise<Fixture> {
  await c.ok('POST', '/v1/webhooks/endpoints', { url: receiverUrl });
  const business: string[] = [];
  for (let i = 0; i < 4; i++) {
    const a = await c.ok('POST', '/v1/accounts', { currency: 'NGN', label: `ops ${i}` });
    await c.ok('POST', `/v1/simulations/accounts/${a.id}/fund`, { amount: '1000000.00' });
    business.push(a.id);
  }
  const customer = (await c.ok('POST', '/v1/customers', customerBody('payer'))).id as string;
  await c.ok('POST', `/v1/simulations/kyc/${customer}`, { outcome: 'approved', level: 'intermediate' });
  const customerNgn = (await c.ok('POST', '/v1/accounts', { currency: 'NGN', label: 'payer', customer_id: customer })).id as string;
  await c.ok('POST', `/v1/simulations/accounts/${customerNgn}/fund`, { amount: '1000000.00' });
  const payees: string[] = [];
  for (let i = 0; i < 3; i++) {
    const p = await c.ok('POST', '/v1/external-accounts', {
      payee_type: 'bank_account',
      account_number: nuban(),
      account_name: 'Amina Bello',
      currency: 'NGN',
      customer_id: customer,
      institution_id: gtb.id,
    });
    payees.push(p.id);
  }
  for (const id of payees) {
    for (let i = 0; ; i++) {
      const p = await c.ok('GET', `/v1/external-accounts/${id}`);
      if (p.status === 'active') break;
      if (p.status === 'failed' || i > 300) throw new Error(`payee ${id} not verified: ${JSON.stringify(p)}`);
      await sleep(50);
    }
  }

  const holder = (await c.ok('POST', '/v1/customers', customerBody('cardholder'))).id as string;
  await c.ok('POST', `/v1/simulations/kyc/${holder}`, { outcome: 'approved', level: 'basic' });
  const cardData = { annual_remuneration: 12000, estimated_monthly_limit: '200.50', ip_address: '12.23.31.23' };
  await c.ok('POST', '/v1/risk/features/activate', { feature_id: 'virtual_cards', customer_id: holder, provider_data: cardData });
  const usd = (await c.ok('POST', '/v1/accounts', { currency: 'USD', label: 'card funding', customer_id: holder })).id as string;
  await c.ok('POST', `/v1/simulations/accounts/${usd}/fund`, { amount: '5000.00' });
  const card = (
    await c.ok('POST', '/v1/cards', { customer_id: holder, card_type: 'virtual', card_limit: 100000, name_on_card: 'John Doe' })
  ).card.id as string;
  await c.ok('POST', '/v1/transfer', {
    source: { source_type: 'internal_account', id: usd },
    destination: { destination_type: 'card', id: card },
    amount: '2000.00',
    client_reference: `card-funding-${card}`,
  });

  const fxCustomer = (await c.ok('POST', '/v1/customers', customerBody('fx'))).id as string;
  const fxUsd = (await c.ok('POST', '/v1/accounts', { currency: 'USD', label: 'fx usd', customer_id: fxCustomer })).id as string;
  const fxNgn = (await c.ok('POST', '/v1/accounts', { currency: 'NGN', label: 'fx ngn', customer_id: fxCustomer })).id as string;
  await c.ok('POST', `/v1/simulations/accounts/${fxUsd}/fund`, { amount: '1000.00' });
  await c.ok('POST', '/v1/simulations/fx/rates', { base: 'USD', quote: 'NGN', rate: '1500' });
  return { business, customer, customerNgn, payees, card, fxUsd, fxNgn, fxCustomer };
}

export type OpKind = 'transfer' | 'payout' | 'collection' | 'collection_complete' | 'card_authorization' | 'customer' | 'limit_order';

export interface Acked {
  kind: OpKind;
  ref: string;
  id: string;
  answer: Answer;
}

export interface LoadResult {
  acked: Acked[];
  refused: Array<{ kind: OpKind; status: number; body: unknown }>;
}

const pick = <T>(list: T[]): T => list[Math.floor(Math.random() * list.length)]!;

/**
 * `lanes` clients in parallel until `durationMs` passes, each doing a weighted mix of money
 * movements and webhook-producing changes. Every op carries a unique reference so its effects
 * can be counted afterwards. `onTick` runs about every second (the test flips FX rates there).
 */
export async function runLoad(
  c: MultiClient,
  f: Fixture,
  durationMs: number,
  lanes = 6,
  onTick?: (elapsed: number) => Promise<void>,
): Promise<LoadResult> {
  const acked: Acked[] = [];
  const refused: LoadResult['refused'] = [];
  const started = Date.now();
  const end = started + durationMs;
  const run = async (kind: OpKind, ref: string, path: string, body: unknown) => {
    const answer = await c.send('POST', path, body);
    if (answer.status >= 200 && answer.status < 300) {
      const data = answer.body.data;
      acked.push({ kind, ref, id: String(data.id ?? data.card?.id ?? ''), answer });
    } else {
      refused.push({ kind, status: answer.status, body: answer.body });
    }
    return answer;
  };
  let collections = 0;
  const ops: Array<[number, (ref: string) => Promise<unknown>]> = [
    [
      40,
      (ref) => {
        const [a, b] = [pick(f.business), pick(f.business)];
        const dest = a === b ? f.business[(f.business.indexOf(a) + 1) % f.business.length]! : b;
        return run('transfer', ref, '/v1/transfer', {
          source: { source_type: 'internal_account', id: a },
          destination: { destination_type: 'internal_account', id: dest },
          amount: '1.00',
          description: 'load',
          client_reference: ref,
        });
      },
    ],
    [
      14,
      (ref) =>
        run('payout', ref, '/v1/transfer', {
          source: { source_type: 'internal_account', id: f.customerNgn },
          destination: { destination_type: 'external_account', id: pick(f.payees) },
          amount: '150.00',
          description: 'supplier',
          customer_id: f.customer,
          additional_information: remitter,
          client_reference: ref,
        }),
    ],
    [
      14,
      async (ref) => {
        const res = await run('collection', ref, '/v1/collections', {
          amount: '25.00',
          currency: 'NGN',
          country: 'NG',
          customer_id: f.customer,
          client_customer_id: 'shopper',
          client_reference: ref,
          source: { source_type: 'external', methods: ['bank_transfer'] },
          destination: { destination_type: 'internal_account', id: pick(f.business) },
        });
        // Every other one is paid at once; the rest wait and expire (the test ages them afterwards).
        if (res.status === 200 && collections++ % 2 === 1) {
          await run('collection_complete', `${ref}-paid`, `/v1/simulations/collections/${res.body.data.id}/complete`, {});
        }
      },
    ],
    [14, (ref) => run('card_authorization', ref, `/v1/simulations/cards/${f.card}/authorizations`, { amount: '1.00', merchant_name: ref })],
    [12, (ref) => run('customer', ref, '/v1/customers', customerBody(ref))],
    [
      6,
      (ref) =>
        run('limit_order', ref, '/v1/fx/orders', {
          customer_id: f.fxCustomer,
          order_type: 'limit',
          side: 'sell',
          pair: { base: 'USD', quote: 'NGN' },
          amount: '1.00',
          target_rate: '1600',
          source_id: f.fxUsd,
          destination_id: f.fxNgn,
        }),
    ],
  ];
  const total = ops.reduce((s, [w]) => s + w, 0);
  const choose = () => {
    let r = Math.random() * total;
    for (const [w, op] of ops) if ((r -= w) < 0) return op;
    return ops[0]![1];
  };
  let n = 0;
  const lane = async () => {
    while (Date.now() < end) await choose()(`ld-${(n++).toString(36)}-${randomUUID().slice(0, 8)}`);
  };
  const ticker = (async () => {
    while (Date.now() < end) {
      await sleep(1000);
      if (onTick) await onTick(Date.now() - started);
    }
  })();
  // Each kind at least once (and a collection left unpaid), then the weighted mix.
  const firstRound = async () => {
    for (const [, op] of ops) await op(`ld-first-${randomUUID().slice(0, 8)}`);
    await lane();
  };
  await Promise.all([firstRound(), ...Array.from({ length: lanes - 1 }, lane), ticker]);
  return { acked, refused };
}
