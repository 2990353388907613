import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { newId } from '../../src/lib/ids.js';
import { Agent } from '../dashboard-agent.js';
import { startTestApp } from '../harness.js';

/**
 * Optional SMTP for invitations and password reset links: a real SMTP server in this process
 * (smtp-server, on loopback, password login) receives what the dashboard mails. The link is shown
 * to the person who made it either way; a mail that cannot be sent is logged and changes nothing else.
 */
interface Received {
  from: string;
  to: string[];
  raw: string;
}
const received: Received[] = [];
let smtp: SMTPServer;
let port: number;

/** The message's text with quoted-printable soft breaks and escapes undone. */
const decoded = (raw: string) =>
  raw.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));

beforeAll(async () => {
  smtp = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, callback) {
      if (auth.username === 'mailer' && auth.password === 'mail pass 123') return callback(null, { user: 'mailer' });
      return callback(new Error('Invalid username or password'));
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString('utf8'),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  port = (smtp.server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => smtp.close(() => resolve())));

const email = (who: string) => `${who}+${newId().slice(-12)}@example.com`;

/** An app whose log lines are kept in `lines`. */
async function appWith(smtpUrl: string) {
  const lines: string[] = [];
  const t = await startTestApp(
    { SMTP_URL: smtpUrl, SMTP_FROM: 'Acme Dashboard <dashboard@example.com>', PUBLIC_BASE_URL: 'https://dash.example.test/' },
    { logger: { level: 'info', stream: { write: (line: string) => lines.push(line) } } },
  );
  const owner = new Agent(t);
  await owner.signup(email('owner'), 'correct horse battery', 'Mail Test Ltd');
  return { t, owner, lines };
}

describe('mailed links', () => {
  let app: Awaited<ReturnType<typeof appWith>>;
  beforeAll(async () => {
    app = await appWith(`smtp://mailer:${encodeURIComponent('mail pass 123')}@127.0.0.1:${port}`);
  });
  afterAll(() => app.t.close());

  it('mails an invitation with the link shown on the page, and the mailed link joins', async () => {
    const { owner, t } = app;
    const address = email('invitee');
    await owner.get('/dashboard/team');
    expect((await owner.post('/dashboard/team/invite', { email: address, role: 'developer' })).statusCode).toBe(303);
    const page = await owner.get('/dashboard/team');
    expect(page.body).toContain(`It was also emailed to ${address}.`);
    const shown = owner.textOf('one-time-link')!;
    expect(shown).toMatch(/^https:\/\/dash\.example\.test\/dashboard\/invite\/[A-Za-z0-9_-]{43}$/);

    const mail = received.find((m) => m.to.includes(address))!;
    expect(mail).toBeDefined();
    expect(mail.from).toBe('dashboard@example.com');
    const text = decoded(mail.raw);
    expect(text).toContain('Subject: Invitation to Mail Test Ltd');
    expect(text).toContain(shown);
    expect(text).toContain('as developer');

    const member = new Agent(t);
    const path = new URL(shown).pathname;
    expect((await member.get(path)).statusCode).toBe(200);
    expect((await member.post(path, { password: 'member long password' })).statusCode).toBe(303);
    // Neither the link nor its token is ever logged.
    const token = path.split('/').pop()!;
    expect(app.lines.join('\n')).not.toContain(token);
    expect(app.lines.some((l) => l.includes('dashboard link mailed'))).toBe(true);
  });

  it('mails a password reset link to the member', async () => {
    const { owner, t } = app;
    const address = (
      await t.db.selectFrom('dashboard_users').select(['id', 'email']).where('role', '=', 'developer').executeTakeFirstOrThrow()
    ).email;
    const id = (await t.db.selectFrom('dashboard_users').select('id').where('email', '=', address).executeTakeFirstOrThrow()).id;
    await owner.get('/dashboard/team');
    expect((await owner.post(`/dashboard/team/members/${id}/reset-link`)).statusCode).toBe(303);
    await owner.get('/dashboard/team');
    const shown = owner.textOf('one-time-link')!;
    const mails = received.filter((m) => m.to.includes(address));
    const text = decoded(mails[mails.length - 1]!.raw);
    expect(text).toContain('Subject: Password reset for Mail Test Ltd');
    expect(text).toContain(shown);
    expect(app.lines.join('\n')).not.toContain(shown.split('/').pop()!);
  });
});

describe('a mail that cannot be sent', () => {
  it('is logged without the link, the address or the password, and the invitation still works', async () => {
    const before = received.length;
    const app = await appWith(`smtp://mailer:${encodeURIComponent('wrong password 1')}@127.0.0.1:${port}`);
    try {
      const address = email('unmailed');
      await app.owner.get('/dashboard/team');
      expect((await app.owner.post('/dashboard/team/invite', { email: address, role: 'viewer' })).statusCode).toBe(303);
      const page = await app.owner.get('/dashboard/team');
      expect(page.body).toContain(`The email to ${address} could not be sent`);
      const shown = app.owner.textOf('one-time-link')!;
      expect(received.length).toBe(before);

      const failure = app.lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => String(l.msg).includes('not mailed'));
      expect(failure).toBeDefined();
      expect(failure!.level).toBe(40); // warn
      expect(failure!.mail).toBe('invite');
      const log = app.lines.join('\n');
      expect(log).not.toContain(shown.split('/').pop()!);
      expect(log).not.toContain(address);
      expect(log).not.toContain('wrong password 1');
      expect(log).not.toContain(encodeURIComponent('wrong password 1'));

      const member = new Agent(app.t);
      const path = new URL(shown).pathname;
      await member.get(path);
      expect((await member.post(path, { password: 'viewer long password' })).statusCode).toBe(303);
    } finally {
      await app.t.close();
    }
  });
});

describe('SMTP configuration', () => {
  const base = { SMTP_URL: 'smtp://user:secret-pass@mail.example.test:587', SMTP_FROM: 'Ops <ops@example.test>' };
  it('accepts an smtp or smtps URL with a sender', () => {
    expect(loadConfig(base).SMTP_URL).toBe(base.SMTP_URL);
    expect(loadConfig({ ...base, SMTP_URL: 'smtps://mail.example.test:465', SMTP_FROM: 'ops@example.test' }).SMTP_FROM).toBe(
      'ops@example.test',
    );
    expect(loadConfig({}).SMTP_URL).toBeUndefined();
  });

  it('refuses at start what would fail at the first invitation, without echoing the password', () => {
    const refused = (env: Record<string, string>) => {
      try {
        loadConfig(env);
      } catch (err) {
        return (err as Error).message;
      }
      throw new Error('accepted');
    };
    const badUrl = refused({ ...base, SMTP_URL: 'http://user:secret-pass@mail.example.test' });
    expect(badUrl).toContain('SMTP_URL');
    expect(badUrl).not.toContain('secret-pass');
    expect(refused({ ...base, SMTP_URL: 'not a url' })).toContain('SMTP_URL');
    expect(refused({ ...base, SMTP_FROM: 'ops at example' })).toContain('SMTP_FROM');
    expect(refused({ SMTP_URL: base.SMTP_URL })).toContain('SMTP_FROM (the sender address) is required');
    expect(refused({ SMTP_FROM: base.SMTP_FROM })).toContain('SMTP_URL is not');
    expect(refused({ ...base, PROFILE: 'production', SECRETS_KEY: 'x'.repeat(44) })).toContain('PUBLIC_BASE_URL is required');
  });
});
