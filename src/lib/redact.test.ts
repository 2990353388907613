import { describe, expect, it } from 'vitest';
import { pinoRedactPaths, REDACTED, redactJsonText, redactString, redactValue } from './redact.js';

describe('redaction rules', () => {
  it('hides sensitive fields at any depth, whatever their case', () => {
    const out = redactValue({
      card: { Card_Number: '4242424242424242', cvv: '123', pin: '1234' },
      list: [{ secret: 'whsec_abc' }],
      amount: '10.00',
    });
    expect(out).toEqual({ card: { Card_Number: REDACTED, cvv: REDACTED, pin: REDACTED }, list: [{ secret: REDACTED }], amount: '10.00' });
  });

  it('masks key-shaped strings and Luhn-valid card numbers inside free text, and only those', () => {
    const key = `sk_live_${'A1b2C3d4'.repeat(5)}`;
    expect(redactString(`key ${key} here`)).toBe(`key ${REDACTED} here`);
    expect(redactString('card 4000 0000 0000 0002 declined')).toBe(`card ${REDACTED} declined`);
    expect(redactString('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')).toBe(REDACTED);
    // Not a card number (fails Luhn): account numbers and references stay readable.
    expect(redactString('account 1234567890123')).toBe('account 1234567890123');
  });

  it('redacts JSON text, and text that is not JSON as a string', () => {
    expect(JSON.parse(redactJsonText('{"data":{"secret_key":"sk_sandbox_x","id":"a"}}'))).toEqual({
      data: { secret_key: REDACTED, id: 'a' },
    });
    expect(redactJsonText('not json 4242424242424242')).toBe(`not json ${REDACTED}`);
  });

  it('returns text with nothing to hide as it is, and still finds a sensitive key in any case or spacing', () => {
    const plain = '{"data":{"id":"a","account_number":"0123456789","amount":"10.00"}}';
    expect(redactJsonText(plain)).toBe(plain);
    expect(JSON.parse(redactJsonText('{"data":{"CVV" : "123","Card_Number":"x"}}'))).toEqual({
      data: { CVV: REDACTED, Card_Number: REDACTED },
    });
    expect(JSON.parse(redactJsonText('{"note":"card 4242424242424242"}'))).toEqual({ note: `card ${REDACTED}` });
    const key = `sk_live_${'A1b2C3d4'.repeat(5)}`;
    expect(JSON.parse(redactJsonText(`{"note":"${key}"}`))).toEqual({ note: REDACTED });
  });

  it('gives the process log the same field list', () => {
    const paths = pinoRedactPaths();
    expect(paths).toContain('req.headers["api-key"]');
    expect(paths).toContain('*.card_number');
    expect(paths).toContain('*.cvv');
  });
});
