import type { DatabaseHandle } from '../src/db/client.js';
import { newId } from '../src/lib/ids.js';
import { movementBatch } from '../src/modules/transfers/pipeline.js';
import type { CreateTransferBody } from '../src/modules/transfers/schema.js';
import { settingsOf } from '../src/modules/tenants/service.js';
import { appConfig, postgresCpuMs } from './server.js';
import { transferBody } from './load.js';

export interface CoreResult {
  perSecond: number;
  transfers: number;
  refused: number;
  /** CPU per transfer of this process and of PostgreSQL's processes, in ms. */
  cpu: { process: number; postgres: number };
}

/**
 * The money path without the server around it: `lanes` loops in this process, each posting
 * batches of `batch` transfers between the accounts `pick` gives through the batch path (`movementBatch`: share
 * locks, spending gate, balance locks, the decision in memory, one write statement, each batch its
 * own transaction), as the server's batches of gathered requests do, for `seconds`. No HTTP, no
 * Idempotency-Key claim, no request log: what the ledger core costs the database and this process.
 */
export async function coreTransfers(
  handle: DatabaseHandle,
  tenantId: string,
  pick: () => [string, string],
  seconds: number,
  batch = 32,
  lanes = 2,
): Promise<CoreResult> {
  const config = appConfig();
  const ctx = {
    tenantId,
    environment: 'sandbox' as const,
    keyKind: 'secret' as const,
    requestId: 'bench-core',
    settings: await settingsOf(handle.db, tenantId),
  };
  const request = () => {
    const [from, to] = pick();
    return { ctx: { ...ctx, requestId: newId() }, config, body: transferBody(from, to) as unknown as CreateTransferBody };
  };
  let transfers = 0;
  let refused = 0;
  const cpuBefore = { process: process.cpuUsage(), postgres: postgresCpuMs() };
  const start = performance.now();
  const end = start + seconds * 1000;
  const lane = async () => {
    while (performance.now() < end) {
      const outcomes = await handle.db.transaction().execute((trx) =>
        movementBatch(
          trx,
          Array.from({ length: batch }, () => request()),
        ),
      );
      for (const o of outcomes) {
        if (o.ok) transfers++;
        else refused++;
      }
    }
  };
  await Promise.all(Array.from({ length: lanes }, lane));
  const elapsed = (performance.now() - start) / 1000;
  const used = process.cpuUsage(cpuBefore.process);
  return {
    perSecond: transfers / elapsed,
    transfers,
    refused,
    cpu: { process: (used.user + used.system) / 1000 / transfers, postgres: (postgresCpuMs() - cpuBefore.postgres) / transfers },
  };
}
