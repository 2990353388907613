import client from 'prom-client';
import type { Queryable } from '../../db/client.js';
import { reconciliationGauges } from './service.js';

/** /metrics: each bank connection's latest statement difference (bank minus ledger, minor units); 0 when they agree. */
export function bankMetrics(db: Queryable): client.Registry {
  const registry = new client.Registry();
  new client.Gauge({
    name: 'fsapi_bank_reconciliation_difference_minor',
    help: "The latest camt.053 closing balance minus the ledger's settlement balance, per bank connection (minor units)",
    labelNames: ['connection_id', 'currency'],
    registers: [registry],
    async collect() {
      this.reset();
      try {
        for (const r of await reconciliationGauges(db))
          this.set({ connection_id: r.connection_id, currency: r.currency }, Number(r.difference));
      } catch {
        // database unavailable: the gauge is empty for this scrape
      }
    },
  });
  return registry;
}
