import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reconcile } from '../../src/ledger/index.js';
import { listInstitutions } from '../../src/lib/institutions.js';
import { buildPain001 } from '../../src/modules/bank-files/messages.js';
import { buildCamt054, buildPain002, type CashEntryInput } from '../../src/modules/bank-files/bank-replies.js';
import { toLatin } from '../../src/lib/latin.js';
import * as bank from '../../src/modules/bank-files/service.js';
import { verifyDuePayees } from '../../src/modules/external-accounts/service.js';
import { dispatchPendingPayouts } from '../../src/modules/transfers/payout-lifecycle.js';
import { bankDeps } from '../../src/workers/bank-files.js';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';
import { approveKycLive } from '../kyc-helpers.js';
import { camt054, folderConnection, ngnCredit } from './fixtures.js';
import { nubans, payoutBody } from '../payout-fixtures.js';

/** Files from the bank that must be refused whole, group-level rejections, and the operator API's door. */
const TOKEN = 'operator-token-of-the-import-tests-0123456789';
const today = new Date().toISOString().slice(0, 10);
const cfg = { SANDBOX_RAIL_DELAY_MS: 0 };

let t: TestApp;
let live: Client;
let tenantId: string;
let customer: string;
let dir: string;
let connectionId: string;
let acc: { id: string; account_number: string };
const deps = () => bankDeps(t.config, t.sealer, { warn: () => undefined } as never);
const auth = { headers: { authorization: `Bearer ${TOKEN}` } };
const ops = (method: 'GET' | 'POST', url: string, body?: unknown) => t.request(method, `/operator/v1/bank${url}`, body, auth);

const credit = (ref: string, amount: string, more: Partial<CashEntryInput> = {}) => ngnCredit(ref, amount, acc.account_number, more);
const importing = (content: string, filename = 'f.xml') => ops('POST', `/connections/${connectionId}/files`, { filename, content });
const balance = async () => (await live.get(`/v1/accounts/${acc.id}`)).body.data.balance;

beforeAll(async () => {
  t = await startTestApp(
    { OPERATOR_API_TOKEN: TOKEN, SANDBOX_RAIL_DELAY_MS: 0 },
    process.env.TEST_LOG ? { logger: { level: 'error' } } : {},
  );
  dir = mkdtempSync(join(tmpdir(), 'bank-folder-'));
  const tenant = await t.tenant('Import Co');
  tenantId = tenant.tenant_id;
  live = clientFor(t, tenant.live.secret_key);
  customer = (await live.post('/v1/customers', johnDoe())).body.data.id;
  await approveKycLive(t.db, tenantId, live, customer);
  acc = (await live.post('/v1/accounts', { currency: 'NGN', label: 'main', customer_id: customer })).body.data;
  const conn = await ops('POST', '/connections', folderConnection(dir));
  expect(conn.status, conn.text).toBe(201);
  connectionId = conn.body.data.id;
  expect((await importing(camt054('FUND', [credit('FUND1', '1000.00')]))).status).toBe(200);
}, 60_000);
afterAll(async () => {
  await t?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the operator API door', () => {
  it('answers 401 without the token, 404 when no token is configured, and refuses a bad connection', async () => {
    expect((await t.request('GET', '/operator/v1/bank/exceptions')).status).toBe(401);
    expect((await t.request('GET', '/operator/v1/bank/exceptions', undefined, { headers: { authorization: 'Bearer wrong' } })).status).toBe(
      401,
    );
    const bare = await startTestApp({});
    try {
      expect((await bare.request('GET', '/operator/v1/bank/exceptions', undefined, auth)).status).toBe(404);
    } finally {
      await bare.close();
    }
    const bad = await ops('POST', '/connections', { name: 'x', account_name: 'x', currency: 'NGN', rails: [], transport: { type: 'ftp' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.map((d: { field: string }) => d.field)).toEqual(expect.arrayContaining(['rails', 'transport.type']));
    const twice = await ops('POST', '/connections', {
      name: 'Second',
      account_name: 'x',
      account_number: '11112222',
      currency: 'NGN',
      rails: ['bank_transfer'],
      transport: { type: 'folder', outbox: '/tmp/o', inbox: '/tmp/i' },
    });
    expect(twice.status).toBe(409);
  });

  it('answers 503 naming the transport when the bank cannot be reached', async () => {
    const unreachable = await ops('POST', '/connections', {
      name: 'Down Bank',
      environment: 'sandbox',
      account_name: 'x',
      account_number: '22223333',
      currency: 'GHS',
      rails: ['bank_transfer'],
      transport: { type: 'sftp', host: '127.0.0.1', port: 1, username: 'nobody', private_key_path: join(dir, 'no-such-key') },
    });
    expect(unreachable.status, unreachable.text).toBe(201);
    const res = await ops('POST', `/connections/${unreachable.body.data.id}/exchange`);
    expect(res.status).toBe(503);
    expect(res.body.error.message).toMatch(/sftp transport failed to list the inbox/);
    expect((await ops('POST', `/connections/${unreachable.body.data.id}/disable`)).body.data.status).toBe('disabled');
  });
});

describe('hostile and malformed files are refused whole, naming the line or entry, booking nothing', () => {
  const refusals: [string, () => string, RegExp][] = [
    ['not XML', () => 'date,amount\n2026-01-01,100', /not XML \(line 1\)/],
    ['not well-formed', () => '<?xml version="1.0"?>\n<Document>\n<A></B>\n</Document>', /not well-formed.*\(line 3\)/],
    [
      'an entity expansion attack',
      () =>
        '<?xml version="1.0"?>\n<!DOCTYPE lolz [\n <!ENTITY lol "lol">\n <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">\n]>\n<Document>&lol2;</Document>',
      /DOCTYPE.*refused \(line 2\)/,
    ],
    [
      'an external entity',
      () => '<?xml version="1.0"?><!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]><Document>&x;</Document>',
      /DOCTYPE.*refused/,
    ],
    [
      'the wrong namespace',
      () => camt054('NS', [credit('NS1', '5.00')]).replace('camt.054.001.08', 'camt.054.001.02'),
      /namespace.*camt.054.001.02/,
    ],
    [
      'a schema error (an amount without currency)',
      () => camt054('SCH', [credit('S1', '5.00'), credit('S2', '6.00')]).replace('<Amt Ccy="NGN">6.00</Amt>', '<Amt>6.00</Amt>'),
      /Ntfctn\[1\]\/Ntry\[2\]/,
    ],
    [
      'a schema error (more decimals than the currency)',
      () => camt054('DEC', [credit('D1', '5.00')]).replace('>5.00<', '>5.001<'),
      /more decimals.*Ntfctn\[1\]\/Ntry\[1\]/,
    ],
    [
      'a currency the connection does not hold',
      () => camt054('CCY', [credit('C1', '5.00'), { ...credit('C2', '6.00'), currency: 'USD' }]),
      /holds NGN, not USD \(Ntfctn\[1\]\/Ntry\[2\]\)/,
    ],
    [
      'an account that is not the connection',
      () =>
        buildCamt054({
          messageId: 'ACC',
          createdAt: new Date(),
          reportId: 'A',
          account: { iban: null, accountNumber: '5555' },
          currency: 'NGN',
          entries: [credit('A1', '5.00')],
        }),
      /not this connection's/,
    ],
    [
      'a pain.002 about a file never sent',
      () => buildPain002({ messageId: 'P', createdAt: new Date(), originalMessageId: 'NOPE', transactions: [] }),
      /OrgnlMsgId NOPE/,
    ],
  ];
  it.each(refusals)('%s', async (_name, content, message) => {
    const before = await balance();
    const res = await importing(content());
    expect(res.status, res.text).toBe(422);
    expect(res.body.error.code).toBe('unprocessable');
    expect(res.body.error.message).toMatch(message);
    expect(await balance()).toBe(before);
  });

  it('a 200 MB file in the inbox is refused by its size, unread, and moved aside', async () => {
    const inbox = join(dir, 'in');
    execFileSync('mkdir', ['-p', inbox]);
    execFileSync('truncate', ['-s', '200M', join(inbox, 'huge.xml')]);
    writeFileSync(join(inbox, 'ok.xml'), camt054('OKFILE', [credit('OK1', '1.00')]));
    const result = await bank.exchange(t.unitOfWork, t.db, connectionId, deps());
    expect(result.rejected).toEqual([{ filename: 'huge.xml', error: expect.stringMatching(/larger than 20971520 bytes/) }]);
    expect(result.imported).toMatchObject([{ filename: 'ok.xml', counts: { credited: 1 } }]);
    expect(readdirSync(join(inbox, 'rejected'))).toEqual(['huge.xml']);
    rmSync(join(inbox, 'rejected', 'huge.xml'));
    expect(await balance()).toBe('1001.00');
  });
});

describe('payouts in a file the bank rejects whole', () => {
  it('fails every payout of the file and releases their holds', async () => {
    const gtb = listInstitutions({ country: 'NG', type: 'bank' }).find((i) => i.code === '058')!;
    const refused = await live.post('/v1/external-accounts', {
      payee_type: 'bank_account',
      account_number: nubans(470000)(),
      account_name: '王小明',
      currency: 'NGN',
      customer_id: customer,
      institution_id: gtb.id,
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.details).toMatchObject([{ field: 'account_name', code: 'unsupported_characters' }]);
    const payee = (
      await live.post('/v1/external-accounts', {
        payee_type: 'bank_account',
        account_number: nubans(480000)(),
        account_name: 'Chinedu Okafor',
        currency: 'NGN',
        customer_id: customer,
        institution_id: gtb.id,
      })
    ).body.data.id;
    await verifyDuePayees(t.db, t.unitOfWork, cfg);
    const pay = async (amount: string) =>
      (await live.post('/v1/transfer', { ...payoutBody(acc.id, payee, amount, { description: '支付' }), customer_id: customer })).body.data
        .id as string;
    const [a, b] = [await pay('100.00'), await pay('150.00')];
    await dispatchPendingPayouts(t.db, cfg);
    const result = await bank.exchange(t.unitOfWork, t.db, connectionId, deps());
    expect(result.delivered).toHaveLength(1);
    const pain = readdirSync(join(dir, 'out'));
    expect(pain).toHaveLength(1);
    const file = await bank.getFile(t.db, result.cut.file!.id);
    // A description the bank cannot carry gives way to our reference.
    expect(file.content).toContain(`<Ustrd>${a}</Ustrd>`);
    expect(file.content).toContain('<BICFI>FSAPNGLAXXX</BICFI>');
    expect(file.content).toContain('<MmbId>058</MmbId>');
    expect((await live.get(`/v1/accounts/${acc.id}`)).body.data.available_balance).not.toBe('1001.00');
    const report = buildPain002({
      messageId: 'GRP',
      createdAt: new Date(),
      originalMessageId: result.cut.file!.message_id,
      groupStatus: 'RJCT',
      groupReason: 'DU01',
      transactions: [],
    });
    const res = await importing(report);
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.counts).toEqual({ rejected: 2 });
    for (const id of [a, b]) {
      const transfer = (await live.get(`/v1/transfers/${id}`)).body.data;
      expect(transfer.transfer_status).toBe('failed');
      expect(transfer.failure_reason).toContain('DU01');
    }
    expect((await live.get(`/v1/accounts/${acc.id}`)).body.data).toMatchObject({ balance: '1001.00', available_balance: '1001.00' });
    // The same report again changes nothing.
    expect((await importing(report)).body.data).toMatchObject({ duplicate: true });
    expect((await reconcile(t.db, tenantId)).ok).toBe(true);
  });
});

describe('an IBAN bank (SEPA)', () => {
  it('books a credit to the account by its IBAN, and writes SEPA payouts by IBAN and BIC in an XSD-valid pain.001', async () => {
    // The business's own EUR account (a customer's needs the EUR feature, activated through KYC review).
    const eur = (await live.post('/v1/accounts', { currency: 'EUR', label: 'eur' })).body.data;
    const iban = eur.bank_details.iban as string;
    expect(iban).toMatch(/^DE\d{2}/);
    const platform = { iban: 'DE89370400440532013000', accountNumber: null };
    const conn = await ops('POST', '/connections', {
      name: 'SEPA Bank',
      account_name: 'FSAPI Platform GmbH',
      iban: platform.iban,
      bic: 'COBADEFFXXX',
      currency: 'EUR',
      rails: ['sepa'],
      transport: { type: 'folder', outbox: join(dir, 'eur-out'), inbox: join(dir, 'eur-in') },
    });
    expect(conn.status, conn.text).toBe(201);
    const notify = buildCamt054({
      messageId: 'EUR1',
      createdAt: new Date(),
      reportId: 'EUR1',
      account: platform,
      currency: 'EUR',
      entries: [
        {
          ref: 'E1',
          amount: 50000n,
          currency: 'EUR',
          direction: 'credit',
          bookingDate: today,
          payerName: 'Müller GmbH',
          creditorAccount: { iban, accountNumber: null },
          reference: 'RE 2026-1',
        },
      ],
    });
    const res = await ops('POST', `/connections/${conn.body.data.id}/files`, { filename: 'eur.xml', content: notify });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.counts).toEqual({ credited: 1 });
    expect((await live.get(`/v1/accounts/${eur.id}`)).body.data.balance).toBe('500.00');
    // The file a SEPA payout travels in (a customer's EUR payee needs the EUR feature, granted by KYC review in live).
    const content = buildPain001({
      messageId: 'FSAPISEPA1',
      createdAt: new Date(),
      initiatingParty: 'FSAPI Platform GmbH',
      debtorName: 'FSAPI Platform GmbH',
      debtorAccount: platform,
      debtorBic: 'COBADEFFXXX',
      debtorBankCode: null,
      payments: [
        {
          endToEndId: bank.endToEndIdOf(eur.id),
          amount: 12345n,
          currency: 'EUR',
          executionDate: today,
          creditorName: toLatin('Hélène Dupré')!,
          creditorAccount: { iban: 'FR1420041010050500013M02606', accountNumber: null },
          creditorBic: 'PSSTFRPPXXX',
          creditorBankCode: null,
          remittance: 'Facture 7',
        },
      ],
    });
    const path = join(dir, 'sepa-pain001.xml');
    writeFileSync(path, content);
    execFileSync('xmllint', ['--noout', '--schema', join(import.meta.dirname, 'xsd', 'pain.001.001.09.xsd'), path], { stdio: 'pipe' });
    for (const fragment of [
      '<IBAN>DE89370400440532013000</IBAN>',
      '<BICFI>COBADEFFXXX</BICFI>',
      '<IBAN>FR1420041010050500013M02606</IBAN>',
      '<BICFI>PSSTFRPPXXX</BICFI>',
      '<Nm>Helene Dupre</Nm>',
      '<InstdAmt Ccy="EUR">123.45</InstdAmt>',
      '<Ustrd>Facture 7</Ustrd>',
    ])
      expect(content).toContain(fragment);
  });
});
