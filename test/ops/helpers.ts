import { authenticator } from 'otplib';
import * as ledger from '../../src/ledger/index.js';
import { newId } from '../../src/lib/ids.js';
import { listInstitutions } from '../../src/lib/institutions.js';
import { nubanCheckDigit } from '../../src/lib/payee-validation.js';
import { verifyDuePayees } from '../../src/modules/external-accounts/service.js';
import { dispatchPendingPayouts } from '../../src/modules/transfers/payout-lifecycle.js';
import { createOperator, startEnrolment, confirmEnrolment, sessionFor, startSession } from '../../src/ops/service.js';
import { findOperatorByEmail } from '../../src/ops/repo.js';
import type { OpsRole } from '../../src/ops/roles.js';
import { Agent } from '../dashboard-agent.js';
import { clientFor, johnDoe, type Client, type TestApp } from '../harness.js';

export const PASSWORD = 'operator password 1';

/** The dashboard's cookie-keeping test client, logging in to the console. */
export class OpsAgent extends Agent {
  async login(email: string, code = '', password = PASSWORD) {
    await this.get('/ops/login');
    return this.post('/ops/login', { email, password, code });
  }
}

/** A TOTP code for the next time step (accepted once, with one step of drift allowed). */
export const nextCode = (secret: string) => authenticator.clone({ epoch: Date.now() + 30_000 }).generate(secret);

/**
 * An operator who has used their setup link (password PASSWORD) and, with `totp`, enrolled a
 * second factor (its secret returned). Made through the same service calls as the console.
 */
export async function operator(t: TestApp, role: OpsRole, options: { totp?: boolean } = {}) {
  const email = `${role}+${newId().slice(-10)}@ops.example.com`;
  const created = await createOperator(t.db, { operatorId: null, email: 'cli' }, email, role);
  const agent = new OpsAgent(t);
  const page = await agent.get(created.setupPath);
  if (page.statusCode !== 200) throw new Error(`setup page: ${page.statusCode}`);
  const done = await agent.post(created.setupPath, { password: PASSWORD });
  if (done.statusCode !== 303) throw new Error(`setup: ${done.statusCode} ${done.body}`);
  let secret: string | undefined;
  if (options.totp) {
    const session = (await sessionFor(t.db, agent.cookies.get('fso_session')!))!;
    secret = (await startEnrolment(t.db, t.sealer, session)).secret;
    if (!(await confirmEnrolment(t.db, t.sealer, session, authenticator.generate(secret)))) throw new Error('enrolment failed');
  }
  return { email, agent, secret, id: (await findOperatorByEmail(t.db, email))!.id };
}

/** A logged-in agent without going through the login form (for tests about other things). */
export async function sessionAgent(t: TestApp, email: string) {
  const op = (await findOperatorByEmail(t.db, email))!;
  const agent = new OpsAgent(t);
  agent.cookies.set('fso_session', await startSession(t.db, op));
  return agent;
}

const PNG_B64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const JPEG_B64 = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01]).toString('base64');

/**
 * A customer with a passport and a selfie whose case waits in manual_review: in live, submitted to
 * the manual connector; with `simulate` (sandbox), sent there by the sandbox's KYC simulation.
 */
export async function liveCaseInReview(t: TestApp, live: Client, name = { first_name: 'Ada', last_name: 'Obi' }, simulate = false) {
  const created = await live.post('/v1/customers', johnDoe({ ...name, email: `c+${newId().slice(-10)}@example.com` }));
  if (created.status !== 200) throw new Error(`customer: ${created.text}`);
  const customerId = created.body.data.id as string;
  const docs = [
    {
      customer_id: customerId,
      metadata: {
        idDocType: 'PASSPORT',
        idDocSubType: 'FRONT_SIDE',
        country: 'NGA',
        number: `A${newId().slice(-8)}`,
        validUntil: '2035-01-15',
      },
      content: PNG_B64,
      filename: 'passport_front.png',
    },
    { customer_id: customerId, metadata: { idDocType: 'SELFIE', country: 'NGA' }, content: JPEG_B64, filename: 'selfie.jpg' },
  ];
  for (const doc of docs) {
    const up = await live.post('/v1/customers/kyc/upload-document', doc);
    if (up.status !== 200) throw new Error(`upload: ${up.text}`);
  }
  const started = simulate
    ? await live.post(`/v1/simulations/kyc/${customerId}`, { outcome: 'manual_review' })
    : await live.post('/v1/customers/kyc/start-s2s', { customer_id: customerId });
  if (started.status !== 200) throw new Error(`submit: ${started.text}`);
  const row = await t.db.selectFrom('kyc_cases').select(['id', 'status']).where('customer_id', '=', customerId).executeTakeFirstOrThrow();
  if (row.status !== 'manual_review') throw new Error(`case is ${row.status}`);
  return { customerId, caseId: row.id };
}

let serial = 700000;
const nuban = () => {
  const s = `${serial++}123`;
  return s + String(nubanCheckDigit('058', s));
};

/**
 * A live payout waiting at the manual connector (processing): a KYC-approved customer, an
 * account credited through the ledger (live has no funding simulation), a verified payee.
 */
export async function livePayout(t: TestApp, tenantId: string, liveKey: string, decide: (caseId: string) => Promise<void>) {
  const live = clientFor(t, liveKey);
  const { customerId, caseId } = await liveCaseInReview(t, live, { first_name: 'Pay', last_name: 'Out' });
  await decide(caseId);
  const src = (await live.post('/v1/accounts', { currency: 'NGN', label: 'live', customer_id: customerId })).body.data.id as string;
  const ls = { tenantId, environment: 'live' as const };
  await t.db.transaction().execute(async (trx) =>
    ledger.post(trx, ls, {
      kind: 'funding',
      legs: [
        { accountId: await ledger.systemAccount(trx, ls, 'settlement', 'NGN'), amount: -100000n, currency: 'NGN' },
        { accountId: src, amount: 100000n, currency: 'NGN' },
      ],
    }),
  );
  const gtb = listInstitutions({ country: 'NG', type: 'bank' }).find((i) => i.code === '058')!;
  const payee = await live.post('/v1/external-accounts', {
    payee_type: 'bank_account',
    account_number: nuban(),
    account_name: 'Live Payee',
    currency: 'NGN',
    customer_id: customerId,
    institution_id: gtb.id,
  });
  if (payee.body?.error || payee.status >= 300) throw new Error(`payee: ${payee.text}`);
  const cfg = { SANDBOX_RAIL_DELAY_MS: 0 };
  await verifyDuePayees(t.db, t.unitOfWork, cfg);
  const transfer = await live.post('/v1/transfer', {
    source: { source_type: 'internal_account', id: src },
    destination: { destination_type: 'external_account', id: payee.body.data.id },
    amount: '100.00',
    customer_id: customerId,
    additional_information: {
      remitter_full_name: 'John Doe',
      remitter_country: 'US',
      remitter_document_number: 'A123456789',
      remitter_document_issue_date: '2020-01-15',
      remitter_document_expiry_date: '2035-01-15',
      remitter_date_of_birth: '1990-06-25',
      remitter_address: { address_line1: '123 Main Street', city: 'New York', state: 'US-NY', postal_code: '10001', country: 'US' },
      remitter_nationality: 'US',
    },
  });
  if (transfer.body?.error || transfer.status >= 300) throw new Error(`transfer: ${transfer.text}`);
  await dispatchPendingPayouts(t.db, cfg);
  return transfer.body.data.id as string;
}
