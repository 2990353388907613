import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isSensitiveField, REDACTED, redactJsonText, redactValue } from '../../src/lib/redact.js';
import { toRow } from '../../src/modules/request-log/service.js';
import { cardholder } from '../card-helpers.js';
import { clientFor, startTestApp, type Client, type TestApp } from '../harness.js';

/**
 * Secrets never reach the API request log, which every dashboard role reads: not the card PIN a
 * client sets (accepted or refused), not any field of the API whose name says it holds a secret.
 */
let t: TestApp;
let api: Client;
let tenantId: string;

beforeAll(async () => {
  t = await startTestApp();
  const biz = await t.tenant('Log Secrets Co');
  tenantId = biz.tenant_id;
  api = clientFor(t, biz.sandbox.secret_key);
});
afterAll(() => t.close());

const stored = async (path: string) => {
  await t.app.requestLog!.flush();
  return t.db
    .selectFrom('api_request_log')
    .select(['request_body', 'response_body'])
    .where('tenant_id', '=', tenantId)
    .where('path', '=', path)
    .execute();
};

describe('the card PIN', () => {
  it('is not kept, whether the PIN was accepted or refused', async () => {
    const customer_id = await cardholder(api);
    const card = (await api.post('/v1/cards', { customer_id, card_type: 'virtual', card_limit: 50, name_on_card: 'Pin Holder' })).body.data
      .card;
    expect((await api.put(`/v1/cards/${card.id}/pin`, { card_pin: '4821' })).status).toBe(200);
    expect((await api.put(`/v1/cards/${card.id}/pin`, { card_pin: '48' })).status).toBe(400);
    expect((await api.put(`/v1/cards/${card.id}/pin`, { cardPin: '7391', 'Card-PIN': 9157 })).status).toBe(400);
    const rows = await stored(`/v1/cards/${card.id}/pin`);
    expect(rows).toHaveLength(3);
    for (const row of rows) {
      expect(row.request_body).toContain(REDACTED);
      for (const pin of ['4821', '"48"', '7391', '9157']) expect(row.request_body).not.toContain(pin);
    }
  });
});

describe("a read's answer", () => {
  it('is kept as sent when nothing in it is secret, and redacted where a metadata key or a value is', async () => {
    const open = async (label: string, metadata: Record<string, unknown>) =>
      (await api.post('/v1/accounts', { currency: 'NGN', label, metadata })).body.data.id as string;
    const plain = await open('plain', { note: 'spin the panel' });
    const keyed = await open('keyed', { cardPin: '5309', note: 'x' });
    const card = await open('card 4242 4242 4242 4242', {});
    const answers = new Map<string, string>();
    for (const id of [plain, keyed, card]) answers.set(id, (await api.get(`/v1/accounts/${id}`)).text);
    const kept = async (id: string) => (await stored(`/v1/accounts/${id}`))[0]!.response_body!;
    expect(await kept(plain)).toBe(answers.get(plain));
    // Quoted: the account number in the same answer is random digits and may hold 5309.
    expect(await kept(keyed)).not.toContain('"5309"');
    expect(JSON.parse(await kept(keyed)).data.metadata).toEqual({ cardPin: REDACTED, note: 'x' });
    expect(await kept(card)).not.toContain('4242 4242 4242 4242');
    expect(JSON.parse(await kept(card)).data.label).toBe(`card ${REDACTED}`);
  });
});

/** Every property name and parameter name of the API's OpenAPI document. */
async function documentedNames(): Promise<Set<string>> {
  const doc = (await t.app.inject({ method: 'GET', url: '/v1/openapi.json' })).json();
  const names = new Set<string>();
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) return v.forEach(walk);
    if (v === null || typeof v !== 'object') return;
    const o = v as Record<string, unknown>;
    if (o.properties && typeof o.properties === 'object') for (const k of Object.keys(o.properties)) names.add(k);
    if (typeof o.name === 'string' && typeof o.in === 'string') names.add(o.name);
    Object.values(o).forEach(walk);
  };
  walk(doc);
  return names;
}

/**
 * Names that look like a secret's word by word but are not one. Each was looked at: a field added
 * to the API whose name carries a secret's word and is not here must be redacted.
 */
const NOT_SECRET = new Set([
  // A header: the request log keeps only its prefix (sk_sandbox_…abcd).
  'Api-Key',
  'expire_old_in_seconds',
  'filename',
  'phone_number',
  'shipping_address',
  'shipping',
  'expires_at',
  'registration_number',
  'is_tokenized',
  'virtual_account_bank_account_number',
  'virtual_account_bank_routing_number',
  'house_building_number',
  'account_number_type',
  'card_last4',
  'card_brand',
  'is_expiring_soon',

  'account_number',
  'IDNumber',
  'content_type',
  'card',
  'card_id',
  'card_type',
  'document_id',
  'document_type',
  'document_sub_type',
  'documents',
  'keyword',
  'x-client-public-key',
  'web_url_expires_at',
  'ExpiryDate',
  'OriginalFilename',
  'key_prefix',
  'card_limit',
  'name_on_card',
  'cards',
  'masked_pan',
  'idempotency_key',
  'Idempotency-Key',
  'last4',
  'card_status',
  'file_name',
  'file_type',
  'bank_code',
  'routing_number',
  'reference_number',
  'passport_number',
  'tracking_number',
]);
/** A secret's words, as substrings: a superset of what the rule matches by segment. */
const LOOKS_SECRET = /pin|cvv|cvc|pan|card|number|secret|pass|token|key|expir|nonce|cipher|content|file|document/i;

describe('every secret-bearing field of the OpenAPI document', () => {
  it('is redacted in request and response bodies at any depth', async () => {
    const names = [...(await documentedNames())].filter((n) => LOOKS_SECRET.test(n) && !NOT_SECRET.has(n));
    expect(names).toContain('card_pin');
    const unredacted = names.filter((n) => !isSensitiveField(n));
    expect(unredacted).toEqual([]);
    for (const name of names) {
      const value = { data: { nested: [{ [name]: '5309' }] } };
      expect(JSON.stringify(redactValue(value)), name).not.toContain('5309');
      expect(redactJsonText(JSON.stringify(value)), name).not.toContain('5309');
      const row = toRow(
        {
          tenantId,
          environment: 'sandbox',
          requestId: 'r',
          method: 'POST',
          url: '/v1/x',
          status: 200,
          durationMs: 1,
          idempotencyKey: null,
          replayed: false,
          keyPrefix: null,
          requestBody: value,
          responseBody: JSON.stringify(value),
          startedAt: Date.now(),
        },
        16_384,
      );
      expect(row.request_body, name).not.toContain('5309');
      expect(row.response_body, name).not.toContain('5309');
    }
  });

  it('catches every spelling of a secret word, and leaves look-alike words alone', () => {
    for (const k of [
      'card_pin',
      'cardPin',
      'CARD-PIN',
      'pin.code',
      'newPIN',
      'PinCode',
      'cvv2',
      'card_cvc',
      'CardNumber',
      'card-number',
      'signingSecret',
      'client_secret',
      'currentPassword',
      'new_password',
      'access_token',
      'cardToken',
      'pan',
      'PAN',
    ])
      expect(isSensitiveField(k), k).toBe(true);
    for (const k of [
      'spin',
      'panel',
      'company',
      'shipping',
      'pinned',
      'spending',
      'tokenizer_name',
      'account_number',
      'expansion',
      'pending',
      'opening_balance',
    ])
      expect(isSensitiveField(k), k).toBe(false);
    expect(redactValue({ pin_set: true, card_pin: 1234 })).toEqual({ pin_set: true, card_pin: REDACTED });
  });
});

describe('migration 1110', () => {
  it('purges the secrets of rows stored before, and keeps look-alike keys', async () => {
    const { readFileSync } = await import('node:fs');
    const { sql } = await import('kysely');
    const { newId } = await import('../../src/lib/ids.js');
    const bodies = [
      ['{"card_pin":"4821"}', '{"card_pin":"[redacted]"}'],
      ['{"cardPin":4821,"spin":"ok"}', '{"cardPin":"[redacted]","spin":"ok"}'],
      ['{"x":{"New-PIN":"4821","panel":"a","company":"Acme"}}', '{"x":{"New-PIN":"[redacted]","panel":"a","company":"Acme"}}'],
      [
        '{"data":{"signingSecret":"s3cr3t","client_secret" : "s3cr3t","currentPassword":"hunter22"}}',
        '{"data":{"signingSecret":"[redacted]","client_secret" : "[redacted]","currentPassword":"[redacted]"}}',
      ],
      [
        '{"card_token":"tok_abc","cardNumber":"4111","PinCode":"1234","shipping":"x","account_number":"0123456789"}',
        '{"card_token":"[redacted]","cardNumber":"[redacted]","PinCode":"[redacted]","shipping":"x","account_number":"0123456789"}',
      ],
    ] as const;
    const ids: string[] = [];
    for (const [body] of bodies) {
      const id = newId();
      ids.push(id);
      await t.db
        .insertInto('api_request_log')
        .values({
          id,
          tenant_id: tenantId,
          environment: 'sandbox',
          request_id: 'old',
          method: 'PUT',
          path: '/v1/old',
          status: 200,
          status_class: 2,
          duration_ms: 1,
          request_body: body,
          response_body: body,
          created_at: new Date(),
        } as never)
        .execute();
    }
    await sql
      .raw(readFileSync(new URL('../../src/db/migrations/1110_request_log_secrets_purged.sql', import.meta.url), 'utf8'))
      .execute(t.db);
    for (const [i, [, expected]] of bodies.entries()) {
      const row = await t.db
        .selectFrom('api_request_log')
        .select(['request_body', 'response_body'])
        .where('id', '=', ids[i]!)
        .executeTakeFirstOrThrow();
      expect(row.request_body).toBe(expected);
      expect(row.response_body).toBe(expected);
    }
  });
});
