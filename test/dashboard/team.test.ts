import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.js';
import { operatorResetLink } from '../../src/dashboard/team-service.js';
import { Agent } from '../dashboard-agent.js';
import { startTestApp, type TestApp } from '../harness.js';

/** Teams: invitations by link, roles and what each may do, removal, resets, password change, audit log. */
let t: TestApp;
let owner: Agent;
const ownerEmail = `owner+${newId().slice(-12)}@example.com`;
beforeAll(async () => {
  t = await startTestApp();
  owner = new Agent(t);
  await owner.signup(ownerEmail);
});
afterAll(() => t.close());

const email = (who: string) => `${who}+${newId().slice(-12)}@example.com`;
const idOf = async (address: string) =>
  (await t.db.selectFrom('dashboard_users').select('id').where('email', '=', address).executeTakeFirstOrThrow()).id;
const roleOf = async (address: string) =>
  (await t.db.selectFrom('dashboard_users').select('role').where('email', '=', address).executeTakeFirstOrThrow()).role;

/** Invites `address` as `role` and joins through the link in a fresh browser session. */
async function join(inviter: Agent, address: string, role: string, password = 'another long password'): Promise<Agent> {
  await inviter.get('/dashboard/team');
  const res = await inviter.post('/dashboard/team/invite', { email: address, role });
  expect(res.statusCode).toBe(303);
  const page = await inviter.get('/dashboard/team');
  const link = inviter.textOf('one-time-link')!;
  expect(link).toMatch(/^http:\/\/[^/]+\/dashboard\/invite\/[A-Za-z0-9_-]{43}$/);
  expect((await inviter.get('/dashboard/team')).body).not.toContain(link); // shown once
  expect(page.body).toContain(address);
  const member = new Agent(t);
  const path = new URL(link).pathname;
  const form = await member.get(path);
  expect(form.body).toContain(`as <strong>${role}</strong>`);
  const joined = await member.post(path, { password });
  expect(joined.statusCode).toBe(303);
  // The link works once.
  expect((await new Agent(t).get(path)).statusCode).toBe(404);
  return member;
}

describe('team', () => {
  it('invites a viewer who reads but is refused keys, webhook changes and team changes', async () => {
    const viewer = await join(owner, email('viewer'), 'viewer');
    expect((await viewer.get('/dashboard/business')).body).toContain('(viewer)');
    expect((await viewer.get('/dashboard/customers')).statusCode).toBe(200);
    expect((await viewer.get('/dashboard/requests')).statusCode).toBe(200);
    const keys = await viewer.get('/dashboard/keys');
    expect(keys.statusCode).toBe(403);
    expect(keys.body).not.toContain('sk_sandbox_');
    await viewer.get('/dashboard/webhooks');
    expect(viewer.lastHtml).not.toContain('Add an endpoint');
    expect((await viewer.post('/dashboard/webhooks', { url: 'http://127.0.0.1:9/x' })).statusCode).toBe(403);
    expect((await viewer.post('/dashboard/keys/rotate', { expire_in_seconds: '0' })).statusCode).toBe(403);
    expect((await viewer.post('/dashboard/team/invite', { email: email('x'), role: 'owner' })).statusCode).toBe(403);
    expect((await viewer.get('/dashboard/audit')).statusCode).toBe(403);
    expect(viewer.lastHtml).not.toContain('href="/dashboard/keys"');
  });

  it('lets a developer manage webhooks but not keys', async () => {
    const dev = await join(owner, email('dev'), 'developer');
    await dev.get('/dashboard/webhooks');
    expect((await dev.post('/dashboard/webhooks', { url: 'http://127.0.0.1:9/dev' })).statusCode).toBe(303);
    expect((await dev.get('/dashboard/keys')).statusCode).toBe(403);
  });

  it('lets an admin invite but not make owners or remove the owner', async () => {
    const admin = await join(owner, email('admin'), 'admin');
    expect((await admin.get('/dashboard/keys')).statusCode).toBe(200);
    await admin.get('/dashboard/team');
    expect(admin.lastHtml).not.toContain('<option value="owner"');
    expect((await admin.post('/dashboard/team/invite', { email: email('x'), role: 'owner' })).statusCode).toBe(400);
    // The owner's own row has no remove button on the owner's page; the admin's page has one.
    const adminPage = await admin.get('/dashboard/team');
    const ids = [...adminPage.body.matchAll(/\/dashboard\/team\/members\/([0-9a-f-]{36})\/remove/g)].map((m) => m[1]!);
    const owners = await t.db.selectFrom('dashboard_users').select('id').where('role', '=', 'owner').where('id', 'in', ids).execute();
    expect(owners).toHaveLength(1);
    const refused = await admin.post(`/dashboard/team/members/${owners[0]!.id}/remove`);
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toContain('Only an owner can remove an owner');
  });

  it('removes a member, whose session ends at once', async () => {
    const address = email('gone');
    const member = await join(owner, address, 'developer');
    expect((await member.get('/dashboard/business')).statusCode).toBe(200);
    const page = await owner.get('/dashboard/team');
    const id = new RegExp(`${address.replace(/[+.]/g, '\\$&')}[\\s\\S]*?/dashboard/team/members/([0-9a-f-]{36})/reset-link`).exec(
      page.body,
    )![1]!;
    expect((await owner.post(`/dashboard/team/members/${id}/remove`)).statusCode).toBe(303);
    const after = await member.get('/dashboard/business');
    expect(after.statusCode).toBe(303);
    expect(after.headers.location).toBe('/dashboard/login');
  });

  it('resets a password by link (from an owner or the operator CLI) and changes it with the current one', async () => {
    const address = email('reset');
    const member = await join(owner, address, 'viewer', 'first long password');
    const page = await owner.get('/dashboard/team');
    const id = new RegExp(`${address.replace(/[+.]/g, '\\$&')}[\\s\\S]*?/dashboard/team/members/([0-9a-f-]{36})/reset-link`).exec(
      page.body,
    )![1]!;
    await owner.post(`/dashboard/team/members/${id}/reset-link`);
    await owner.get('/dashboard/team');
    const path = new URL(owner.textOf('one-time-link')!).pathname;
    const fresh = new Agent(t);
    await fresh.get(path);
    expect((await fresh.post(path, { password: 'second long password' })).statusCode).toBe(303);
    // The reset ended the member's older session.
    expect((await member.get('/dashboard/business')).statusCode).toBe(303);

    const cliPath = await operatorResetLink(t.db, address);
    const viaCli = new Agent(t);
    await viaCli.get(cliPath);
    expect((await viaCli.post(cliPath, { password: 'third long password' })).statusCode).toBe(303);

    await viaCli.get('/dashboard/profile');
    expect(
      (await viaCli.post('/dashboard/profile/password', { current_password: 'wrong password!', new_password: 'fourth long password' }))
        .statusCode,
    ).toBe(400);
    const changed = await viaCli.post('/dashboard/profile/password', {
      current_password: 'third long password',
      new_password: 'fourth long password',
    });
    expect(changed.body).toContain('Password changed');
    const login = new Agent(t);
    await login.get('/dashboard/login');
    expect((await login.post('/dashboard/login', { email: address, password: 'fourth long password' })).statusCode).toBe(303);
  }, 90_000); // five password hashes: slow on a busy 2-core machine

  it('changes roles: owners and admins may, admins never touch owners, the last owner stays an owner', async () => {
    const address = email('promoted');
    const member = await join(owner, address, 'developer');
    const memberId = await idOf(address);
    const ownerId = await idOf(ownerEmail);
    const page = await owner.get('/dashboard/team');
    expect(page.body).toContain(`action="/dashboard/team/members/${memberId}/role"`);
    expect(page.body).toContain(`aria-label="Change the role of ${address}"`);

    // Owner makes the developer an admin: the member's next request has the new role.
    expect((await member.get('/dashboard/keys')).statusCode).toBe(403);
    expect((await owner.post(`/dashboard/team/members/${memberId}/role`, { role: 'admin' })).statusCode).toBe(303);
    expect(await roleOf(address)).toBe('admin');
    expect((await member.get('/dashboard/keys')).statusCode).toBe(200);

    // An admin cannot change an owner, nor make anyone (themselves included) an owner.
    const adminPage = await member.get('/dashboard/team');
    expect(adminPage.body).not.toContain(`/dashboard/team/members/${ownerId}/role`);
    const touchOwner = await member.post(`/dashboard/team/members/${ownerId}/role`, { role: 'viewer' });
    expect(touchOwner.statusCode).toBe(400);
    expect(touchOwner.body).toContain('Only an owner can change an owner’s role');
    const selfOwner = await member.post(`/dashboard/team/members/${memberId}/role`, { role: 'owner' });
    expect(selfOwner.statusCode).toBe(400);
    expect(selfOwner.body).toContain('Choose a role you may give');
    expect((await member.post(`/dashboard/team/members/${memberId}/role`, { role: 'superuser' })).statusCode).toBe(400);
    expect(await roleOf(ownerEmail)).toBe('owner');

    // The only owner cannot step down.
    await owner.get('/dashboard/team');
    const last = await owner.post(`/dashboard/team/members/${ownerId}/role`, { role: 'admin' });
    expect(last.statusCode).toBe(400);
    expect(last.body).toContain('A business keeps at least one owner');
    expect(await roleOf(ownerEmail)).toBe('owner');

    // With a second owner, an owner may step down.
    expect((await owner.post(`/dashboard/team/members/${memberId}/role`, { role: 'owner' })).statusCode).toBe(303);
    await member.get('/dashboard/team');
    expect((await member.post(`/dashboard/team/members/${memberId}/role`, { role: 'viewer' })).statusCode).toBe(303);
    expect(await roleOf(address)).toBe('viewer');
    expect((await member.get('/dashboard/audit')).statusCode).toBe(403);
    expect((await member.get('/dashboard/team')).body).not.toContain('/role"');

    // Two owners demoting each other at once: exactly one of them succeeds.
    await owner.get('/dashboard/team');
    expect((await owner.post(`/dashboard/team/members/${memberId}/role`, { role: 'owner' })).statusCode).toBe(303);
    await member.get('/dashboard/team');
    const both = await Promise.all([
      owner.post(`/dashboard/team/members/${memberId}/role`, { role: 'admin' }),
      member.post(`/dashboard/team/members/${ownerId}/role`, { role: 'admin' }),
    ]);
    expect(both.map((r) => r.statusCode).sort()).toEqual([303, 400]);
    expect([await roleOf(ownerEmail), await roleOf(address)].sort()).toEqual(['admin', 'owner']);
    // Leave the first owner in charge for the tests that follow.
    if ((await roleOf(ownerEmail)) !== 'owner') {
      await member.get('/dashboard/team');
      expect((await member.post(`/dashboard/team/members/${ownerId}/role`, { role: 'owner' })).statusCode).toBe(303);
    }

    const audit = await owner.get('/dashboard/audit?action=member.role_changed');
    expect(audit.body).toContain('developer → admin');
    expect(audit.body).toContain(address);
  }, 60_000);

  it('keeps an audit log of dashboard actions', async () => {
    await owner.get('/dashboard/keys');
    await owner.post('/dashboard/keys/rotate', { expire_in_seconds: '3600' });
    const audit = await owner.get('/dashboard/audit');
    expect(audit.statusCode).toBe(200);
    for (const action of [
      'member.invited',
      'member.joined',
      'member.removed',
      'member.reset_link',
      'member.role_changed',
      'password.reset',
      'password.changed',
      'keys.rotated',
      'webhook.endpoint_created',
    ]) {
      expect(audit.body).toContain(action);
    }
    expect((await owner.get('/dashboard/audit?action=keys.rotated')).body).not.toContain('member.invited');
  });
});
