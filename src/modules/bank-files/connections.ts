import type { Queryable } from '../../db/client.js';
import { notFound, validationError } from '../../core/errors.js';
import { connectionHeld } from './errors.js';
import { formatAmount } from '../../lib/money.js';
import { newId } from '../../lib/ids.js';
import * as repo from './repo.js';
import { ConnectionInput } from './schema.js';

/** A sponsor bank account the platform exchanges files with, and how the files travel. */

export function toConnectionResponse(c: repo.ConnectionRow) {
  const t = c.transport_config;
  return {
    id: c.id,
    name: c.name,
    environment: c.environment,
    account_name: c.account_name,
    iban: c.iban,
    account_number: c.account_number,
    bic: c.bic,
    bank_code: c.bank_code,
    currency: c.currency,
    rails: c.rails,
    status: c.status,
    // The key's path is shown, never the key.
    transport:
      c.transport === 'sftp'
        ? {
            type: 'sftp' as const,
            host: t.host,
            port: t.port,
            username: t.username,
            private_key_path: t.private_key_path,
            remote_outbox: t.remote_outbox,
            remote_inbox: t.remote_inbox,
          }
        : { type: 'folder' as const, outbox: t.outbox, inbox: t.inbox },
    created_at: c.created_at.toISOString(),
  };
}
export type ConnectionResponse = ReturnType<typeof toConnectionResponse>;

export async function addConnection(db: Queryable, input: unknown): Promise<ConnectionResponse> {
  const parsed = ConnectionInput.safeParse(input);
  if (!parsed.success) {
    throw validationError(parsed.error.issues.map((i) => ({ field: i.path.join('.') || 'body', code: 'invalid', message: i.message })));
  }
  const c = parsed.data;
  const { type, ...transportConfig } = c.transport;
  const row = await repo
    .insertConnection(db, {
      id: newId(),
      environment: c.environment,
      name: c.name,
      account_name: c.account_name,
      iban: c.iban ?? null,
      account_number: c.account_number ?? null,
      bic: c.bic ?? null,
      bank_code: c.bank_code ?? null,
      currency: c.currency,
      rails: JSON.stringify(c.rails),
      transport: type,
      transport_config: JSON.stringify(transportConfig),
    })
    .catch((err: unknown) => {
      if (String((err as { code?: string }).code) === '23505') throw connectionHeld(c.environment, c.currency);
      throw err;
    });
  return toConnectionResponse(row);
}

export async function listConnections(db: Queryable) {
  return (await repo.listConnections(db)).map(toConnectionResponse);
}

export async function connectionOf(db: Queryable, id: string, lock?: 'update') {
  const row = /^[0-9a-f-]{36}$/i.test(id) ? await repo.findConnection(db, id, lock) : undefined;
  if (!row) throw notFound('Bank connection');
  return row;
}

export async function getConnection(db: Queryable, id: string) {
  return toConnectionResponse(await connectionOf(db, id));
}

export async function setConnectionStatus(db: Queryable, id: string, status: 'active' | 'disabled') {
  await connectionOf(db, id);
  const row = await repo.setConnectionStatus(db, id, status);
  return toConnectionResponse(row!);
}

// ---------- payouts out: pain.001 ----------

// ---------- the files of a connection ----------

export async function listFiles(db: Queryable, connectionId?: string, limit = 100) {
  return (await repo.listFiles(db, connectionId, limit)).map((f) => ({
    id: f.id,
    connection_id: f.connection_id,
    direction: f.direction,
    kind: f.kind,
    message_id: f.message_id,
    filename: f.filename,
    checksum: f.checksum,
    size: Number(f.size),
    status: f.status,
    summary: f.summary,
    created_at: f.created_at.toISOString(),
    delivered_at: f.delivered_at?.toISOString() ?? null,
  }));
}

export async function getFile(db: Queryable, id: string) {
  const f = /^[0-9a-f-]{36}$/i.test(id) ? await repo.findFile(db, id) : undefined;
  if (!f) throw notFound('Bank file');
  const payouts = await repo.payoutsOfFile(db, f.id);
  return {
    ...(await listFiles(db, f.connection_id, 1000)).find((x) => x.id === f.id)!,
    content: f.content,
    payouts: payouts.map((p) => ({
      transfer_id: p.transfer_id,
      end_to_end_id: p.end_to_end_id,
      amount: formatAmount(p.amount, p.currency),
      currency: p.currency,
      status: p.status,
      reason: p.reason,
    })),
  };
}
