import type { Config } from '../../config.js';
import type { Queryable, Trx } from '../../db/client.js';
import type { RequestContext, Scope } from '../../core/context.js';
import { findBulk, insertBulk } from './bulk-repo.js';
import { notFound, validationError } from '../../core/errors.js';
import { newId } from '../../lib/ids.js';
import { lockAhead } from './locks.js';
import { movementBatch } from './pipeline.js';
import type { BulkItemResult, BulkResponse, CreateBulkBody, CreateTransferBody } from './schema.js';

/**
 * Items per batch of the posting path. Each chunk's statements are built and held at once (their
 * text, parameters and Kysely's nodes for every value): chunks of 100 keep the server's peak
 * memory under the bulk load lower than larger chunks for nearly the same throughput
 * (docs/benchmarks.md#the-figures-behind-the-defaults), and stay far below PostgreSQL's 65,535 parameters.
 */
const CHUNK = 100;

function assertUniqueReferences(body: CreateBulkBody) {
  const seen = new Map<string, number>();
  const details = body.transfers.flatMap((item, i) => {
    const first = seen.get(item.client_reference);
    seen.set(item.client_reference, first ?? i);
    return first === undefined
      ? []
      : [{ field: `transfers.${i}.client_reference`, code: 'duplicate', message: `Same as transfers.${first}` }];
  });
  if (details.length > 0) throw validationError(details, 'Each transfer of a bulk needs its own client_reference');
}

/**
 * A bulk of internal transfers, in the caller's transaction (the bulk's idempotency record commits
 * with it, so the bulk is idempotent as a whole). Items go through the batch posting path in
 * chunks, in file order: each is decided on its own (completed or the error it got), never
 * all-or-nothing across items.
 */
export async function createBulk(trx: Trx, ctx: RequestContext, body: CreateBulkBody, config: Config): Promise<BulkResponse> {
  assertUniqueReferences(body);
  const items: BulkItemResult[] = [];
  const reqs = body.transfers.map((item) => ({ ctx, config, body: item as CreateTransferBody }));
  if (reqs.length > CHUNK) await lockAhead(trx, reqs);
  for (let start = 0; start < body.transfers.length; start += CHUNK) {
    const chunk = body.transfers.slice(start, start + CHUNK);
    const outcomes = await movementBatch(trx, reqs.slice(start, start + CHUNK));
    outcomes.forEach((o, k) => {
      const index = start + k;
      const client_reference = chunk[k]!.client_reference;
      items.push(
        o.ok
          ? { index, client_reference, status: 'completed', transfer: o.response, error: null }
          : {
              index,
              client_reference,
              status: 'failed',
              transfer: null,
              error: { code: o.error.code, message: o.error.message, details: o.error.details },
            },
      );
    });
  }
  const succeeded = items.filter((i) => i.status === 'completed').length;
  const row = {
    id: newId(),
    tenant_id: ctx.tenantId,
    environment: ctx.environment,
    description: body.description ?? '',
    total_items: items.length,
    succeeded,
    failed: items.length - succeeded,
  };
  const createdAt = await insertBulk(trx, { ...row, items: JSON.stringify(items) });
  return {
    id: row.id,
    status: 'completed',
    description: row.description,
    total_items: row.total_items,
    succeeded,
    failed: row.failed,
    items,
    date_created: createdAt.toISOString(),
  };
}

export async function getBulk(db: Queryable, ctx: Scope, id: string): Promise<BulkResponse> {
  const row = await findBulk(db, ctx, id);
  if (!row) throw notFound('Bulk transfer');
  const { tenant_id: _t, environment: _e, created_at, ...rest } = row;
  return { ...rest, status: 'completed', date_created: created_at.toISOString() };
}
