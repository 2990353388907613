import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Counters } from '../lib/counters.js';

/**
 * Cookies. Over TLS (served by us, or behind a trusted proxy that says https) they are `Secure`
 * and use the `__Host-` prefix, which pins them to this host and path `/`. The production
 * profile refuses the dashboard over plain HTTP altogether (see routes.ts), so there every
 * cookie is Secure. Development exception: plain HTTP on a laptop (`npm start` on 127.0.0.1)
 * cannot carry a Secure cookie, so there the cookies go without it; they stay HttpOnly and
 * SameSite, and expire like the others.
 */
export function isSecureRequest(request: FastifyRequest): boolean {
  return request.protocol === 'https';
}

export function cookieNames(secure: boolean) {
  const prefix = secure ? '__Host-' : '';
  return { session: `${prefix}fsd_session`, preauth: `${prefix}fsd_csrf` };
}

export function parseCookies(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (!(name in out) && /^[A-Za-z0-9_.-]*$/.test(value)) out[name] = value;
  }
  return out;
}

export interface CookieOptions {
  secure: boolean;
  maxAgeSeconds: number;
  sameSite: 'Strict' | 'Lax';
}

export function serializeCookie(name: string, value: string, o: CookieOptions): string {
  const parts = [`${name}=${value}`, 'Path=/', `Max-Age=${o.maxAgeSeconds}`, 'HttpOnly', `SameSite=${o.sameSite}`];
  if (o.secure) parts.push('Secure');
  return parts.join('; ');
}

export function addCookie(reply: FastifyReply, cookie: string): void {
  const existing = reply.getHeader('set-cookie');
  const list = existing === undefined ? [] : Array.isArray(existing) ? existing : [String(existing)];
  reply.header('set-cookie', [...list, cookie]);
}

export function tokensEqual(a: string | undefined, b: string | undefined): boolean {
  if (!a || !b) return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export const randomToken = () => randomBytes(32).toString('base64url');

/** Responses of the dashboard: no framing, no outside resources, nothing cached. */
export function setSecurityHeaders(reply: FastifyReply): void {
  reply.header(
    'Content-Security-Policy',
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
      "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  );
  reply.header('X-Frame-Options', 'DENY');
  reply.header('X-Content-Type-Options', 'nosniff');
  reply.header('Referrer-Policy', 'same-origin');
  reply.header('Cache-Control', 'no-store');
}

/**
 * Browsers send Origin on every cross-site POST. A POST whose Origin names another site is
 * refused before any token is even looked at (defence in depth beside the CSRF tokens).
 */
export function originAllowed(request: FastifyRequest): boolean {
  const origin = request.headers.origin;
  if (origin === undefined) return true;
  try {
    return new URL(origin).host === request.headers.host;
  } catch {
    return false;
  }
}

/**
 * Failed-login limiter: at most `max` failures per key (email, IP) in a sliding window. The
 * failures live in `counters`: Redis when REDIS_URL is set, so the limit holds across every API
 * process; otherwise this process's memory (each process counts on its own).
 */
export class FailureLimiter {
  constructor(
    private readonly counters: Counters,
    private readonly name: string,
    private readonly max: number,
    private readonly windowMs: number,
  ) {}

  /** Seconds until the key may try again, or 0 when it may try now. */
  async blockedFor(key: string, now = Date.now()): Promise<number> {
    const { count, oldest } = await this.counters.failures(`${this.name}:${key}`, this.windowMs, now);
    if (count < this.max || oldest === null) return 0;
    return Math.max(1, Math.ceil((oldest + this.windowMs - now) / 1000));
  }

  async fail(key: string, now = Date.now()): Promise<void> {
    await this.counters.fail(`${this.name}:${key}`, this.max, this.windowMs, now);
  }

  async reset(key: string): Promise<void> {
    await this.counters.reset(`${this.name}:${key}`);
  }
}
