import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.js';
import type { Db } from '../db/client.js';
import type { Job } from '../core/job.js';
import type { Sealer } from '../lib/crypto.js';
import { activeConnectionIds, exchange, type BankDeps } from '../modules/bank-files/service.js';
import { creditInbound } from '../modules/collections/inbound.js';

/**
 * What the bank file exchange needs from other modules, built by each entry point (the app, the
 * CLI, the worker): the inbound credit path of collections (the one the sandbox fund simulation
 * takes), and where a statement that disagrees with the ledger is reported.
 */
export function bankDeps(config: Config, sealer: Sealer, log: Pick<FastifyBaseLogger, 'warn'>): BankDeps {
  const collections = { config, sealer, baseUrl: (config.PUBLIC_BASE_URL ?? '').replace(/\/$/, '') };
  return {
    creditInbound: (trx, scope, accountId, credit) => creditInbound(trx, scope, accountId, credit, collections),
    onBreak: (r) =>
      log.warn(
        {
          event: 'bank.reconciliation.break',
          connection_id: r.connection_id,
          statement_id: r.statement_id,
          difference: r.difference,
          currency: r.currency,
        },
        'bank statement does not agree with the ledger',
      ),
  };
}

/**
 * The scheduled cut: each active bank connection, in turn, cuts a pain.001 of waiting payouts,
 * delivers it and imports what the bank left in its inbox. Each step owns short transactions
 * around the network calls (service.exchange).
 */
export function bankExchangeJob(db: Db, config: Config, sealer: Sealer, log: FastifyBaseLogger): Job {
  const deps = bankDeps(config, sealer, log);
  return {
    name: 'bank-exchange',
    intervalMs: config.BANK_EXCHANGE_INTERVAL_MS,
    tick: async () => {
      let failure: unknown;
      // One bank unreachable does not hold back the others; the first failure is rethrown (logged).
      for (const id of await activeConnectionIds(db)) {
        try {
          const result = await exchange((work) => db.transaction().execute(work), db, id, deps);
          for (const r of result.rejected) log.warn({ connection_id: id, file: r.filename, error: r.error }, 'bank file refused');
        } catch (err) {
          failure ??= err;
        }
      }
      if (failure) throw failure;
      return false;
    },
  };
}
