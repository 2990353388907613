import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword } from '../../src/dashboard/passwords.js';
import { newId } from '../../src/lib/ids.js';
import { Agent } from '../dashboard-agent.js';
import { startTestApp, type TestApp } from '../harness.js';

/**
 * A password hash (scrypt) costs tens of milliseconds of CPU: no request a stranger can send may
 * cost one without a limit, and a guessed link token costs none.
 */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

/** CPU time of this process (every thread: scrypt runs on libuv's pool) spent by `work`, in ms. */
async function cpuOf(work: () => Promise<unknown>): Promise<number> {
  const before = process.cpuUsage();
  await work();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000;
}

const bogusToken = () => randomBytes(32).toString('base64url');

describe('invitation links', () => {
  it('look the token up before hashing, and limit failed uses per client address', async () => {
    const guesser = new Agent(t);
    await guesser.get('/dashboard/login'); // a page with the pre-login CSRF field
    const guess = () => guesser.post(`/dashboard/invite/${bogusToken()}`, { password: 'a long enough password' });
    const oneHash = await cpuOf(() => hashPassword('a long enough password'));
    const guesses = await cpuOf(async () => {
      for (let i = 0; i < 8; i++) expect((await guess()).statusCode).toBe(400);
    });
    // Eight hashes before; now eight lookups, far below even three hashes.
    expect(guesses).toBeLessThan(oneHash * 3);
    for (let i = 8; i < 20; i++) expect((await guess()).statusCode).toBe(400);
    const refused = await guess();
    expect(refused.statusCode).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
  });
});

describe('the profile page', () => {
  it('limits wrong current passwords per login', async () => {
    const me = new Agent(t);
    await me.signup(`profile+${newId().slice(-12)}@example.com`, 'correct horse battery');
    await me.get('/dashboard/profile');
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++) {
      const res = await me.post('/dashboard/profile/password', {
        current_password: `guess number ${i}`,
        new_password: 'a brand new passphrase',
      });
      statuses.push(res.statusCode);
    }
    expect(statuses.slice(0, 10).every((s) => s === 400)).toBe(true);
    expect(statuses[10]).toBe(429);
    // Even the right password waits now: the guesser cannot tell.
    const right = await me.post('/dashboard/profile/password', {
      current_password: 'correct horse battery',
      new_password: 'a brand new passphrase',
    });
    expect(right.statusCode).toBe(429);
  }, 60_000);
});
