import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildCamt054 } from '../../src/modules/bank-files/bank-replies.js';

/** The operator's bank commands, run as an operator runs them (embedded database in a fresh DATA_DIR). */
const dir = mkdtempSync(join(tmpdir(), 'bank-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const { DATABASE_URL: _ignored, ...rest } = process.env;
const env = { ...rest, DATA_DIR: join(dir, 'data') };
const cli = (...args: string[]) => execFileSync('npx', ['tsx', 'src/cli.ts', ...args], { env, encoding: 'utf8' });

// The commands run on their own embedded database whatever the suite's: once per CI run is enough.
describe.skipIf(Boolean(process.env.DATABASE_URL))('bank commands', () => {
  it('adds a connection, imports the inbox, and returns an unmatched credit to its sender', () => {
    const inbox = join(dir, 'inbox');
    const config = {
      name: 'CLI Bank',
      account_name: 'Platform Ltd',
      iban: 'DE89 3704 0044 0532 0130 00',
      bic: 'COBADEFFXXX',
      currency: 'EUR',
      rails: ['sepa'],
      transport: { type: 'folder', outbox: join(dir, 'outbox'), inbox },
    };
    const connection = JSON.parse(cli('bank', 'connections', 'add', '--config', JSON.stringify(config), '--json'));
    expect(connection).toMatchObject({ iban: 'DE89370400440532013000', currency: 'EUR', transport: { type: 'folder' } });
    mkdirSync(inbox, { recursive: true });
    const camt = buildCamt054({
      messageId: 'CLI1',
      createdAt: new Date(),
      reportId: 'CLI1',
      account: { iban: 'DE89370400440532013000', accountNumber: null },
      currency: 'EUR',
      entries: [
        {
          ref: 'X1',
          amount: 1234n,
          currency: 'EUR',
          direction: 'credit',
          bookingDate: '2026-01-02',
          payerName: 'Unknown Payer',
          creditorAccount: { iban: 'DE02120300000000202051', accountNumber: null },
          reference: 'Order 9',
        },
      ],
    });
    writeFileSync(join(inbox, 'camt054.xml'), camt);
    writeFileSync(join(inbox, 'bad.xml'), '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]><Document>&a;</Document>');
    const exchange = spawnSync('npx', ['tsx', 'src/cli.ts', 'bank', 'exchange', '--connection', connection.id], { env, encoding: 'utf8' });
    expect(exchange.status, exchange.stderr).toBe(1);
    expect(exchange.stdout).toContain('REFUSED bad.xml');
    expect(exchange.stdout).toMatch(/Imported camt054.xml: \{"exception":1\}/);
    const open = JSON.parse(cli('bank', 'exceptions', '--status', 'open', '--json'));
    expect(open).toMatchObject([
      { amount: '12.34', currency: 'EUR', payer_name: 'Unknown Payer', creditor_account: 'DE02120300000000202051' },
    ]);
    const returned = JSON.parse(cli('bank', 'exceptions', 'return', '--exception', open[0].id, '--note', 'Sent back', '--json'));
    expect(returned).toMatchObject({ status: 'returned', resolved_note: 'Sent back' });
  }, 120_000);
});
