import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reconcile } from '../../src/ledger/index.js';
import { listInstitutions } from '../../src/lib/institutions.js';
import { parseAmount } from '../../src/lib/money.js';
import { buildCamt053, buildCamt054, buildPain002, type CashEntryInput } from '../../src/modules/bank-files/bank-replies.js';
import { endToEndIdOf } from '../../src/modules/bank-files/service.js';
import { verifyDuePayees } from '../../src/modules/external-accounts/service.js';
import { dispatchPendingPayouts } from '../../src/modules/transfers/payout-lifecycle.js';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';
import { approveKycLive } from '../kyc-helpers.js';
import { nubans, payoutBody } from '../payout-fixtures.js';
import { hasSshd, startSftpServer } from './sftp-server.js';

/**
 * The acceptance test of the bank file exchange: one day of live operations with a sponsor bank,
 * over SFTP to a real OpenSSH server, on the database the suite runs on.
 */
const XSD = join(import.meta.dirname, 'xsd');
const TOKEN = 'operator-token-for-the-day-of-live-operations';
const cfg = { SANDBOX_RAIL_DELAY_MS: 0 };
const PLATFORM = { iban: null, accountNumber: '0123456789' };
const today = new Date().toISOString().slice(0, 10);
const minor = (s: string) => parseAmount(s, 'NGN');

let t: TestApp;
let sftp: Awaited<ReturnType<typeof startSftpServer>>;
let live: Client;
let tenantId: string;
const ops = {
  get: (url: string) => t.request('GET', `/operator/v1/bank${url}`, undefined, { headers: { authorization: `Bearer ${TOKEN}` } }),
  post: (url: string, body: unknown = {}) =>
    t.request('POST', `/operator/v1/bank${url}`, body, { headers: { authorization: `Bearer ${TOKEN}` } }),
};

function xmllint(file: string, xsd: string) {
  return execFileSync('xmllint', ['--noout', '--schema', join(XSD, xsd), file], { encoding: 'utf8', stdio: 'pipe' });
}

/** The bank leaves a file in the inbox, after checking it against its schema as a bank would. */
function bankSends(name: string, content: string, xsd: string) {
  const path = join(sftp.inbox, name);
  writeFileSync(path, content);
  xmllint(path, xsd);
}

describe.skipIf(!hasSshd())('a day of live operations with the sponsor bank', () => {
  beforeAll(async () => {
    t = await startTestApp(
      { OPERATOR_API_TOKEN: TOKEN, SANDBOX_RAIL_DELAY_MS: 0 },
      process.env.TEST_LOG ? { logger: { level: 'error' } } : {},
    );
    sftp = await startSftpServer();
    const tenant = await t.tenant('Payroll Co');
    tenantId = tenant.tenant_id;
    live = clientFor(t, tenant.live.secret_key);
  }, 60_000);
  afterAll(async () => {
    await sftp?.stop();
    await t?.close();
  });

  it('pays out, hears back, books money in once, queues the unknown and reconciles', async () => {
    // ----- set-up: the connection, a customer with three accounts, two payees -----
    expect((await t.request('GET', '/operator/v1/bank/connections')).status).toBe(401);
    const conn = await ops.post('/connections', {
      name: 'Sponsor Bank NG',
      environment: 'live',
      account_name: 'FSAPI Platform Ltd',
      account_number: PLATFORM.accountNumber,
      bank_code: '999',
      currency: 'NGN',
      rails: ['bank_transfer'],
      transport: {
        type: 'sftp',
        host: '127.0.0.1',
        port: sftp.port,
        username: sftp.user,
        private_key_path: sftp.privateKeyPath,
        host_key_sha256: sftp.fingerprint,
        remote_outbox: sftp.outbox,
        remote_inbox: sftp.inbox,
      },
    });
    expect(conn.status, conn.text).toBe(201);
    const connectionId = conn.body.data.id as string;
    expect(conn.body.data.transport).not.toHaveProperty('private_key');

    const customer = (await live.post('/v1/customers', johnDoe())).body.data.id as string;
    await approveKycLive(t.db, tenantId, live, customer);
    const open = async () => (await live.post('/v1/accounts', { currency: 'NGN', label: 'main', customer_id: customer })).body.data;
    const [acc1, acc2, acc3] = [await open(), await open(), await open()];
    const gtb = listInstitutions({ country: 'NG', type: 'bank' }).find((i) => i.code === '058')!;
    const nuban = nubans(450000);
    const payee = async (name: string) =>
      (
        await live.post('/v1/external-accounts', {
          payee_type: 'bank_account',
          account_number: nuban(),
          account_name: name,
          currency: 'NGN',
          customer_id: customer,
          institution_id: gtb.id,
        })
      ).body.data.id as string;
    const [amina, zoe] = [await payee('Amina Bello'), await payee('Zoë Ångström & Sons')];
    await verifyDuePayees(t.db, t.unitOfWork, cfg);

    // ----- morning: money arrives (camt.054), booked to the accounts it names -----
    const e = (ref: string, amount: string, direction: 'credit' | 'debit', more: Partial<CashEntryInput> = {}): CashEntryInput => ({
      ref,
      amount: minor(amount),
      currency: 'NGN',
      direction,
      bookingDate: today,
      ...more,
    });
    const morning = [
      e('F1', '1000.00', 'credit', { payerName: 'Employer One', creditorAccount: { iban: null, accountNumber: acc1.account_number } }),
      e('F2', '500.00', 'credit', { payerName: 'Employer Two', creditorAccount: PLATFORM, reference: `Top-up ${acc2.account_number}` }),
    ];
    bankSends(
      'camt054-morning.xml',
      buildCamt054({ messageId: 'N1', createdAt: new Date(), reportId: 'N1', account: PLATFORM, currency: 'NGN', entries: morning }),
      'camt.054.001.08.xsd',
    );
    let pass = await ops.post(`/connections/${connectionId}/exchange`);
    expect(pass.status, pass.text).toBe(200);
    expect(pass.body.data.imported).toMatchObject([{ kind: 'camt.054', counts: { credited: 2 } }]);
    expect(pass.body.data.cut.file).toBeUndefined();
    expect((await live.get(`/v1/accounts/${acc1.id}`)).body.data.balance).toBe('1000.00');
    expect((await live.get(`/v1/accounts/${acc2.id}`)).body.data.balance).toBe('500.00');
    const tx2 = (await live.get(`/v1/transactions?account_id=${acc2.id}`)).body.data.items;
    expect(tx2[0].description).toContain('Employer Two');

    // ----- payouts cut into a pain.001 and delivered over SFTP -----
    const send = async (from: string, to: string, amount: string, description: string) => {
      const res = await live.post('/v1/transfer', { ...payoutBody(from, to, amount, { description }), customer_id: customer });
      expect(res.status, res.text).toBe(200);
      return res.body.data as { id: string; fee: string };
    };
    const p1 = await send(acc1.id, amina, '100.00', 'Invoice 1');
    const p2 = await send(acc1.id, zoe, '200.00', 'Royalties');
    const p3 = await send(acc2.id, amina, '120.00', 'Invoice 3');
    await dispatchPendingPayouts(t.db, cfg);
    pass = await ops.post(`/connections/${connectionId}/exchange`);
    expect(pass.status, pass.text).toBe(200);
    expect(pass.body.data.delivered).toHaveLength(1);
    const delivered = readdirSync(sftp.outbox).filter((f) => f.endsWith('.xml'));
    expect(delivered).toEqual([pass.body.data.delivered[0]]);
    const painPath = join(sftp.outbox, delivered[0]!);
    expect(xmllint(painPath, 'pain.001.001.09.xsd')).toBe('');
    const pain = readFileSync(painPath, 'utf8');
    expect(pain).toContain('<NbOfTxs>3</NbOfTxs>');
    expect(pain).toContain('<CtrlSum>420.00</CtrlSum>');
    expect(pain).toContain('<Nm>Zoe Angstrom + Sons</Nm>');
    expect(pain).toContain(`<EndToEndId>${endToEndIdOf(p2.id)}</EndToEndId>`);
    expect(pain).toContain('<InstdAmt Ccy="NGN">200.00</InstdAmt>');
    const files = (await ops.get(`/files?connection_id=${connectionId}`)).body.data;
    const out = files.find((f: { direction: string }) => f.direction === 'out');
    expect(out).toMatchObject({ kind: 'pain.001', status: 'delivered', summary: { payouts: 3 } });
    expect(out.checksum).toMatch(/^[0-9a-f]{64}$/);
    const outFile = (await ops.get(`/files/${out.id}`)).body.data;
    expect(outFile.payouts.map((p: { status: string }) => p.status)).toEqual(['submitted', 'submitted', 'submitted']);
    // Never in two files.
    pass = await ops.post(`/connections/${connectionId}/exchange`);
    expect(pass.body.data.cut.file).toBeUndefined();
    expect(readdirSync(sftp.outbox).filter((f) => f.endsWith('.xml'))).toHaveLength(1);

    // ----- pain.002: two accepted, one rejected -----
    const msgId = /<MsgId>([^<]+)<\/MsgId>/.exec(pain)![1]!;
    bankSends(
      'pain002.xml',
      buildPain002({
        messageId: 'STS1',
        createdAt: new Date(),
        originalMessageId: msgId,
        transactions: [
          { endToEndId: endToEndIdOf(p1.id), status: 'ACSC' },
          { endToEndId: endToEndIdOf(p2.id), status: 'ACCC' },
          { endToEndId: endToEndIdOf(p3.id), status: 'RJCT', reason: 'AC04' },
        ],
      }),
      'pain.002.001.10.xsd',
    );
    pass = await ops.post(`/connections/${connectionId}/exchange`);
    expect(pass.body.data.imported).toMatchObject([{ kind: 'pain.002', counts: { completed: 2, rejected: 1 } }]);
    const status = async (id: string) => (await live.get(`/v1/transfers/${id}`)).body.data;
    expect((await status(p1.id)).transfer_status).toBe('completed');
    expect((await status(p2.id)).transfer_status).toBe('completed');
    expect(await status(p3.id)).toMatchObject({ transfer_status: 'failed' });
    expect((await status(p3.id)).failure_reason).toContain('AC04');
    expect((await live.get(`/v1/accounts/${acc2.id}`)).body.data).toMatchObject({ balance: '500.00', available_balance: '500.00' });

    // ----- camt.054: credits to three accounts, one unknown, one return; imported twice -----
    const day = [
      e('D1', '100.00', 'debit', { endToEndId: endToEndIdOf(p1.id) }),
      e('D2', '200.00', 'debit', { endToEndId: endToEndIdOf(p2.id) }),
      e('C1', '300.00', 'credit', {
        payerName: 'ACME Ltd',
        creditorAccount: { iban: null, accountNumber: acc1.account_number },
        reference: 'INV-77',
      }),
      e('C2', '150.00', 'credit', { payerName: 'Beta Plc', creditorAccount: PLATFORM, reference: `Ref ${acc2.account_number}` }),
      e('C3', '75.00', 'credit', { payerName: 'Gamma', creditorAccount: { iban: null, accountNumber: acc3.account_number } }),
      e('C4', '40.00', 'credit', {
        payerName: 'Stranger',
        creditorAccount: { iban: null, accountNumber: '9999999999' },
        reference: 'who?',
      }),
      e('R1', '200.00', 'credit', { endToEndId: endToEndIdOf(p2.id), returnReason: 'AC01', payerName: 'Zoe Angstrom' }),
    ];
    const camt054 = buildCamt054({
      messageId: 'N2',
      createdAt: new Date(),
      reportId: 'N2',
      account: PLATFORM,
      currency: 'NGN',
      entries: day,
    });
    bankSends('camt054-day.xml', camt054, 'camt.054.001.08.xsd');
    pass = await ops.post(`/connections/${connectionId}/exchange`);
    expect(pass.body.data.imported).toMatchObject([
      { kind: 'camt.054', duplicate: false, counts: { payout_confirmed: 2, credited: 3, exception: 1, payout_returned: 1 } },
    ]);
    // The same file again, and a later notification repeating an entry: nothing books twice.
    bankSends('camt054-day-again.xml', camt054, 'camt.054.001.08.xsd');
    bankSends(
      'camt054-repeat.xml',
      buildCamt054({ messageId: 'N3', createdAt: new Date(), reportId: 'N3', account: PLATFORM, currency: 'NGN', entries: [day[4]!] }),
      'camt.054.001.08.xsd',
    );
    pass = await ops.post(`/connections/${connectionId}/exchange`);
    expect(pass.body.data.imported).toMatchObject([
      { filename: 'camt054-day-again.xml', duplicate: true },
      { filename: 'camt054-repeat.xml', duplicate: false, counts: { duplicate: 1 } },
    ]);
    expect((await status(p2.id)).transfer_status).toBe('returned');

    // ----- the exception: listed, then assigned to the account the operator found -----
    const openList = (await ops.get('/exceptions?status=open')).body.data;
    expect(openList).toMatchObject([{ amount: '40.00', currency: 'NGN', payer_name: 'Stranger', reference: 'who?', status: 'open' }]);
    const assigned = await ops.post(`/exceptions/${openList[0].id}/assign`, { account_id: acc3.id, note: 'Customer called' });
    expect(assigned.status, assigned.text).toBe(200);
    expect(assigned.body.data).toMatchObject({ status: 'assigned', account_id: acc3.id });
    expect((await ops.post(`/exceptions/${openList[0].id}/assign`, { account_id: acc3.id })).status).toBe(409);

    // ----- camt.053: one statement agrees, a later one does not -----
    const credits =
      minor('1000.00') + minor('500.00') + minor('300.00') + minor('150.00') + minor('75.00') + minor('40.00') + minor('200.00');
    const closing = credits - minor('300.00');
    bankSends(
      'camt053.xml',
      buildCamt053({
        messageId: 'S1',
        createdAt: new Date(),
        reportId: 'S1',
        account: PLATFORM,
        currency: 'NGN',
        entries: [...morning, ...day],
        opening: 0n,
        closing,
        date: today,
      }),
      'camt.053.001.08.xsd',
    );
    pass = await ops.post(`/connections/${connectionId}/exchange`);
    expect(pass.body.data.imported[0]).toMatchObject({
      kind: 'camt.053',
      counts: { duplicate: 9 },
      reconciliation: { status: 'agreed', difference: '0.00' },
    });
    bankSends(
      'camt053-fee.xml',
      buildCamt053({
        messageId: 'S2',
        createdAt: new Date(),
        reportId: 'S2',
        account: PLATFORM,
        currency: 'NGN',
        entries: [e('B1', '5.00', 'debit', { reference: 'Account fee' })],
        opening: closing,
        closing: closing - minor('5.00'),
        date: today,
      }),
      'camt.053.001.08.xsd',
    );
    pass = await ops.post(`/connections/${connectionId}/exchange`);
    const brk = pass.body.data.imported[0].reconciliation;
    expect(brk).toMatchObject({ status: 'break', difference: '-5.00', bank_balance: '1960.00', ledger_balance: '1965.00' });
    expect(brk.explanation).toMatchObject([{ direction: 'debit', amount: '5.00', reference: 'Account fee' }, { unexplained: '0.00' }]);
    expect((await ops.get('/reconciliations')).body.data.map((r: { status: string }) => r.status)).toEqual(['break', 'agreed']);
    const metrics = (await t.request('GET', '/metrics')).text;
    expect(metrics).toContain(`fsapi_bank_reconciliation_difference_minor{connection_id="${connectionId}",currency="NGN"} -500`);

    // ----- the end of the day: balances, events, exceptions, ledger -----
    const fees = minor(p1.fee) + minor(p2.fee);
    const balance = async (id: string) => minor((await live.get(`/v1/accounts/${id}`)).body.data.balance);
    expect(await balance(acc1.id)).toBe(minor('1000.00') + minor('300.00') - minor('100.00') - minor('200.00') - fees + minor('200.00'));
    expect(await balance(acc2.id)).toBe(minor('650.00'));
    expect(await balance(acc3.id)).toBe(minor('115.00'));
    const events = async (id: string) =>
      (await t.db.selectFrom('events').select('event_type').where('event_group_id', '=', id).orderBy('id').execute()).map(
        (x) => x.event_type,
      );
    expect(await events(p1.id)).toEqual(['transfer.status.pending', 'transfer.status.processing', 'transfer.status.completed']);
    expect(await events(p2.id)).toEqual([
      'transfer.status.pending',
      'transfer.status.processing',
      'transfer.status.completed',
      'transfer.status.returned',
    ]);
    expect(await events(p3.id)).toEqual(['transfer.status.pending', 'transfer.status.processing', 'transfer.status.failed']);
    const all = (await ops.get('/exceptions')).body.data;
    expect(all.map((x: { status: string; amount: string }) => `${x.status} ${x.amount}`)).toEqual(['open 5.00', 'assigned 40.00']);
    expect(readdirSync(join(sftp.inbox, 'processed'))).toHaveLength(7);
    const ledger = await reconcile(t.db);
    expect(ledger.ok, JSON.stringify(ledger)).toBe(true);
  }, 120_000);
});
