import type { TestApp } from './harness.js';

/**
 * A minimal cookie-keeping client for the dashboard over Fastify's inject: enough to play a
 * browser in plain HTTP tests (cookies, forms, the CSRF field of the last page).
 */
export class Agent {
  cookies = new Map<string, string>();
  /** The last page answered 200 (error pages do not replace it). */
  lastHtml = '';
  constructor(
    private readonly t: Pick<TestApp, 'app'>,
    private readonly headers: Record<string, string> = {},
  ) {}

  private cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  private remember(setCookie: string | string[] | undefined) {
    for (const line of [setCookie ?? []].flat()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      if (/Max-Age=0/.test(line) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  async get(url: string, headers: Record<string, string> = {}) {
    const res = await this.t.app.inject({ method: 'GET', url, headers: { ...this.headers, cookie: this.cookieHeader(), ...headers } });
    this.remember(res.headers['set-cookie']);
    if (res.statusCode === 200 && res.headers['content-type']?.toString().startsWith('text/html')) this.lastHtml = res.body;
    return res;
  }

  /** Posts a form (a list value: the field repeated); `_csrf` is taken from the last page unless given (null: left out). */
  async post(url: string, fields: Record<string, string | string[] | null> = {}, headers: Record<string, string> = {}) {
    const form = new URLSearchParams();
    const csrf = fields._csrf === undefined ? this.csrf() : fields._csrf;
    if (typeof csrf === 'string') form.set('_csrf', csrf);
    for (const [k, v] of Object.entries(fields)) {
      if (k === '_csrf' || v === null) continue;
      for (const one of [v].flat()) form.append(k, one);
    }
    const res = await this.t.app.inject({
      method: 'POST',
      url,
      headers: { ...this.headers, cookie: this.cookieHeader(), 'content-type': 'application/x-www-form-urlencoded', ...headers },
      payload: form.toString(),
    });
    this.remember(res.headers['set-cookie']);
    if (res.statusCode === 200 && res.headers['content-type']?.toString().startsWith('text/html')) this.lastHtml = res.body;
    return res;
  }

  csrf(): string | undefined {
    return /name="_csrf" value="([^"]+)"/.exec(this.lastHtml)?.[1];
  }

  /** The text of the element with this id on the last page (e.g. a shown key). */
  textOf(id: string): string | undefined {
    const m = new RegExp(`id="${id}"[^>]*>([^<]*)<`).exec(this.lastHtml);
    return m?.[1];
  }

  async signup(email: string, password = 'correct horse battery', business = 'Acme Ltd') {
    await this.get('/dashboard/signup');
    return this.post('/dashboard/signup', { business_name: business, email, password });
  }
}
