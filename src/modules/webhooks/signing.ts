import { createHmac, randomBytes } from 'node:crypto';

/** `whsec_` + base64 of 32 random bytes (Standard Webhooks); the HMAC key is the decoded bytes. */
export function generateSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

function secretKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
}

/** One `v1,<base64 HMAC-SHA256 of id.timestamp.body>` per secret, space-separated. */
export function signatureHeader(secrets: string[], id: string, timestampSeconds: number, body: string): string {
  const signed = `${id}.${timestampSeconds}.${body}`;
  return secrets.map((secret) => `v1,${createHmac('sha256', secretKey(secret)).update(signed).digest('base64')}`).join(' ');
}

/** The Standard Webhooks headers of one attempt, signed afresh with the current time. */
export function signedHeaders(secrets: string[], id: string, body: string, now = new Date()): Record<string, string> {
  const timestamp = Math.floor(now.getTime() / 1000);
  return {
    'content-type': 'application/json',
    'user-agent': 'financial-services-api-webhooks/1',
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeader(secrets, id, timestamp, body),
  };
}
