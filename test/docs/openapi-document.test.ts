import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../harness.js';

/**
 * The OpenAPI document as a reader and a "try it" page use it: valid OpenAPI, every POST declaring
 * the Idempotency-Key it cannot run without, a validating example on every body, one tag per
 * group, a server to send to, and no refused crypto value documented as accepted. The reference
 * page's own copy (3.0, shared error answers) is valid too and keeps every operation.
 */
let t: TestApp;
let doc: any;

beforeAll(async () => {
  t = await startTestApp();
  doc = (await t.request('GET', '/v1/openapi.json')).body;
});
afterAll(async () => t?.close());

type Operation = { method: string; path: string; op: any };
function operations(document: any): Operation[] {
  return Object.entries(document.paths as Record<string, Record<string, any>>).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({ method, path, op })),
  );
}

describe('OpenAPI document', () => {
  it('is valid OpenAPI 3.1, and the reference page copy is valid OpenAPI 3.0', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);

    const reference = (await t.request('GET', '/docs/openapi.json')).body;
    expect(reference.openapi).toBe('3.0.3');
    const refResult = await new Validator().validate(structuredClone(reference));
    expect(refResult.errors ?? []).toEqual([]);
    expect(operations(reference).map((o) => `${o.method} ${o.path}`)).toEqual(operations(doc).map((o) => `${o.method} ${o.path}`));
    // Much smaller than the full document: each error answer is stated once.
    expect(JSON.stringify(reference).length).toBeLessThan(JSON.stringify(doc).length / 2);
  });

  it('declares a required Idempotency-Key header on every POST, pre-filled freshly on the reference page', async () => {
    const posts = operations(doc).filter((o) => o.method === 'post');
    expect(posts.length).toBeGreaterThan(40);
    for (const { path, op } of posts) {
      const header = (op.parameters ?? []).find((p: any) => p.in === 'header' && p.name === 'Idempotency-Key');
      expect(header, path).toMatchObject({ required: true, schema: { type: 'string', maxLength: 255 } });
    }
    const keysOf = async () => {
      const reference = (await t.request('GET', '/docs/openapi.json')).body;
      return operations(reference)
        .filter((o) => o.method === 'post')
        .map((o) => o.op.parameters.find((p: any) => p.name === 'Idempotency-Key').example as string);
    };
    const first = await keysOf();
    const second = await keysOf();
    expect(first.every((k) => /^docs-[0-9a-f-]{36}$/.test(k))).toBe(true);
    expect(new Set([...first, ...second]).size).toBe(first.length + second.length);
  });

  it('carries a request example on every operation with a body, each valid against its schema', () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats.default(ajv);
    for (const [name, schema] of Object.entries(doc.components.schemas as Record<string, object>)) {
      ajv.addSchema(schema, `#/components/schemas/${name}`);
    }
    const withBody = operations(doc).filter((o) => o.op.requestBody);
    expect(withBody.length).toBeGreaterThan(40);
    const failures: string[] = [];
    for (const { method, path, op } of withBody) {
      const json = op.requestBody.content['application/json'];
      expect(json.example, `${method} ${path}`).toBeDefined();
      const validate = ajv.compile({ ...json.schema, components: doc.components });
      if (!validate(json.example)) failures.push(`${method} ${path}: ${ajv.errorsText(validate.errors)}`);
    }
    expect(failures).toEqual([]);
  });

  it('the examples work: the customer example creates a customer as it is', async () => {
    const biz = await t.tenant('Example Co');
    const example = doc.paths['/v1/customers'].post.requestBody.content['application/json'].example;
    const res = await t.request('POST', '/v1/customers', example, { key: biz.sandbox.secret_key });
    expect(res.status).toBe(200);
    const customer = res.body.data.id as string;
    const approve = doc.paths['/v1/simulations/kyc/{customer_id}'].post.requestBody.content['application/json'].example;
    expect((await t.request('POST', `/v1/simulations/kyc/${customer}`, approve, { key: biz.sandbox.secret_key })).status).toBe(200);
    const account = { ...doc.paths['/v1/accounts'].post.requestBody.content['application/json'].example, customer_id: customer };
    expect((await t.request('POST', '/v1/accounts', account, { key: biz.sandbox.secret_key })).status).toBe(200);
  });

  it('has one tag per group, a server, our title, and no refused crypto value documented as accepted', () => {
    const tags = new Set(operations(doc).flatMap((o) => o.op.tags as string[]));
    expect(tags.has('Transfer')).toBe(false);
    expect(tags.has('Transfers')).toBe(true);
    for (const tag of tags)
      expect([...tags].filter((other) => other.toLowerCase().replace(/s$/, '') === tag.toLowerCase().replace(/s$/, ''))).toEqual([tag]);
    expect(doc.servers).toEqual([expect.objectContaining({ url: expect.any(String) })]);
    expect(doc.info.title).toBe('Financial Services API');
    const text = JSON.stringify(doc.paths) + JSON.stringify(doc.components);
    for (const refused of ['"crypto_wallet"', '"internal_crypto_wallet"', '"external_crypto_wallet"']) expect(text).not.toContain(refused);
    const transfer = doc.components.schemas.TransferRequest ?? doc.components.schemas.TransferRequestInput;
    const destination = transfer?.properties?.destination ?? doc.paths['/v1/transfers'].post.requestBody.content['application/json'].schema;
    expect(JSON.stringify(destination)).toContain('Accepted and ignored');
  });
});

describe('site root', () => {
  it('redirects / to the dashboard and serves a favicon', async () => {
    const root = await t.app.inject({ method: 'GET', url: '/' });
    expect(root.statusCode).toBe(302);
    expect(root.headers.location).toBe('/dashboard');
    const icon = await t.app.inject({ method: 'GET', url: '/favicon.ico' });
    expect(icon.statusCode).toBe(200);
    expect(icon.headers['content-type']).toContain('image/svg+xml');
    expect(icon.body).toContain('<svg');
  });
});
