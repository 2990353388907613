import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { Db, UnitOfWork } from '../db/client.js';
import { isUniqueViolation } from '../db/errors.js';
import type { Environment } from '../core/context.js';
import { sha256, type Sealer } from '../lib/crypto.js';
import { newId } from '../lib/ids.js';
import { createTenant, getTenant, listKeys, maskKey, rotateKeys, type KeyPair } from '../modules/tenants/service.js';
import { hashPassword, isCommonPassword, verifyAgainstDummy, verifyPassword } from './passwords.js';
import * as repo from './repo.js';
import type { Role } from './roles.js';

/** Absolute session lifetime: a stolen cookie is useless after this, whatever the activity. */
export const SESSION_HOURS = 12;

export const SignupForm = z.object({
  business_name: z.string().trim().min(2, 'Enter the business name (2 to 100 characters)').max(100, 'At most 100 characters'),
  email: z.string().trim().toLowerCase().max(254).email('Enter a valid email address'),
  password: z
    .string()
    .min(12, 'Use at least 12 characters')
    .max(200, 'Use at most 200 characters')
    .refine((p) => !isCommonPassword(p), 'This password is too common: choose another (a few unrelated words work well)'),
});
export type SignupForm = z.infer<typeof SignupForm>;

export const LoginForm = z.object({
  email: z.string().trim().toLowerCase().max(254),
  password: z.string().max(200),
});

/** A secret shown exactly once on the next page, then gone. */
export type Flash =
  | { kind: 'keys'; keys: Partial<Record<Environment, KeyPair>>; old_keys_expire_at?: string }
  | { kind: 'webhook_secret'; endpoint_id: string; secret: string }
  | { kind: 'link'; title: string; path: string; mailed?: { to: string; sent: boolean } };

export interface Session {
  id: string;
  userId: string;
  email: string;
  tenantId: string;
  environment: Environment;
  csrfToken: string;
  role: Role;
}

export class EmailTaken extends Error {}

function toSession(row: repo.SessionRow): Session {
  return {
    id: row.id,
    userId: row.user_id,
    email: row.email,
    tenantId: row.tenant_id,
    environment: row.environment,
    csrfToken: row.csrf_token,
    role: row.role,
  };
}

export class DashboardService {
  constructor(
    private readonly db: Db,
    private readonly sealer: Sealer,
    /** The routes' unit of work (`deps.inTransaction`): this service never opens a transaction itself. */
    private readonly inTransaction: UnitOfWork,
  ) {}

  /** Business + both key pairs + the first user; the new secret keys go to a one-time flash. */
  async signup(form: SignupForm): Promise<{ token: string; session: Session }> {
    if (await repo.findUserByEmail(this.db, form.email)) throw new EmailTaken();
    const passwordHash = await hashPassword(form.password);
    // The business is created in a unit of its own; a lost race on the email leaves an unused
    // business with keys nobody has seen, which is harmless (the pre-check makes it rare).
    const created = await this.inTransaction((trx) => createTenant(trx, form.business_name));
    const userId = newId();
    try {
      await repo.insertUser(this.db, {
        id: userId,
        tenant_id: created.tenant_id,
        email: form.email,
        password_hash: passwordHash,
        role: 'owner',
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw new EmailTaken();
      throw err;
    }
    await repo.upsertPublicKey(this.db, created.tenant_id, 'sandbox', created.sandbox.public_key);
    await repo.upsertPublicKey(this.db, created.tenant_id, 'live', created.live.public_key);
    const started = await this.startSession(userId, created.tenant_id, form.email, 'owner');
    await this.setFlash(started.session, { kind: 'keys', keys: { sandbox: created.sandbox, live: created.live } });
    return started;
  }

  /** The session for a correct email and password; null otherwise (same time either way). */
  async login(email: string, password: string): Promise<{ token: string; session: Session } | null> {
    const user = await repo.findUserByEmail(this.db, email);
    const ok = user ? await verifyPassword(password, user.password_hash) : await verifyAgainstDummy(password);
    if (!user || !ok) return null;
    return this.startSession(user.id, user.tenant_id, user.email, user.role);
  }

  async startSession(userId: string, tenantId: string, email: string, role: Role) {
    const token = randomBytes(32).toString('base64url');
    const row = {
      id: newId(),
      token_hash: sha256(token),
      user_id: userId,
      tenant_id: tenantId,
      environment: 'sandbox' as const,
      csrf_token: randomBytes(32).toString('base64url'),
      flash_sealed: null,
      expires_at: new Date(Date.now() + SESSION_HOURS * 3_600_000),
    };
    await repo.insertSession(this.db, row);
    return { token, session: toSession({ ...row, email, role, created_at: new Date() }) };
  }

  /** A session for a login that just proved itself another way (an invitation or reset link). */
  async startSessionFor(userId: string): Promise<{ token: string; session: Session }> {
    const user = await repo.findUserById(this.db, userId);
    if (!user) throw new Error('login vanished');
    return this.startSession(user.id, user.tenant_id, user.email, user.role);
  }

  async sessionFor(token: string): Promise<Session | null> {
    if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return null;
    const row = await repo.findSession(this.db, sha256(token));
    return row ? toSession(row) : null;
  }

  async logout(session: Session): Promise<void> {
    await repo.deleteSession(this.db, session.id);
  }

  async switchEnvironment(session: Session, environment: Environment): Promise<void> {
    await repo.setEnvironment(this.db, session.id, environment);
  }

  async setFlash(session: Session, flash: Flash): Promise<void> {
    await repo.setFlash(this.db, session.id, this.sealer.seal(JSON.stringify(flash), `dashboard-flash:${session.id}`));
  }

  async takeFlash(session: Session): Promise<Flash | null> {
    const sealed = await repo.takeFlash(this.db, session.id);
    return sealed ? (JSON.parse(this.sealer.open(sealed, `dashboard-flash:${session.id}`)) as Flash) : null;
  }

  /** Keys of the session's environment, with the full public key when the dashboard knows it. */
  async keys(session: Session) {
    const keys = await listKeys(this.db, session.tenantId, session.environment);
    const publicKey = await repo.findPublicKey(this.db, session.tenantId, session.environment);
    const newestPublic = keys.find((k) => k.kind === 'public' && k.expires_at === null);
    // Shown only if it is still the current public key (a rotation by the operator CLI replaces it).
    const masked = publicKey ? maskKey(publicKey.slice(0, publicKey.lastIndexOf('_') + 1), publicKey.slice(-4)) : null;
    const current = newestPublic && newestPublic.masked === masked ? publicKey : null;
    return { keys, publicKey: current };
  }

  async rotate(session: Session, expireInSeconds: number): Promise<void> {
    const rotated = await this.inTransaction((trx) => rotateKeys(trx, session.tenantId, session.environment, expireInSeconds));
    await repo.upsertPublicKey(this.db, session.tenantId, session.environment, rotated.public_key);
    await this.setFlash(session, {
      kind: 'keys',
      keys: { [session.environment]: { public_key: rotated.public_key, secret_key: rotated.secret_key } },
      old_keys_expire_at: rotated.old_keys_expire_at,
    });
  }
}

export const UserForm = SignupForm.pick({ email: true, password: true });

/**
 * A dashboard login for an existing business (operator CLI: e.g. the demo business made at
 * start-up, or a second person). Throws EmailTaken, or Error when the business does not exist.
 */
export async function addUser(
  db: Db,
  tenantId: string,
  input: { email: string; password: string },
): Promise<{ user_id: string; email: string }> {
  const parsed = UserForm.safeParse(input);
  if (!parsed.success) throw new Error(parsed.error.issues.map((i) => `${String(i.path[0])}: ${i.message}`).join('; '));
  const { email, password } = parsed.data;
  if (!(await getTenant(db, tenantId))) throw new Error(`No business ${tenantId}`);
  if (await repo.findUserByEmail(db, email)) throw new EmailTaken();
  const id = newId();
  try {
    await repo.insertUser(db, { id, tenant_id: tenantId, email, password_hash: await hashPassword(password), role: 'owner' });
  } catch (err) {
    if (isUniqueViolation(err)) throw new EmailTaken();
    throw err;
  }
  return { user_id: id, email };
}

/**
 * The demo business of a first start: the business, its owner's login, and its public keys kept
 * for the keys page (public keys may be shown again; secret keys are shown once, by the caller).
 */
export async function createDemoBusiness(db: Db, inTransaction: UnitOfWork, login: { email: string; password: string }) {
  const demo = await inTransaction((trx) => createTenant(trx, 'Demo Business'));
  await repo.upsertPublicKey(db, demo.tenant_id, 'sandbox', demo.sandbox.public_key);
  await repo.upsertPublicKey(db, demo.tenant_id, 'live', demo.live.public_key);
  await addUser(db, demo.tenant_id, login);
  return demo;
}

/** Background job: deletes a bounded batch of expired sessions; > 0 means run again. */
export async function purgeExpiredSessions(db: Db): Promise<number> {
  return repo.deleteExpiredSessions(db);
}
