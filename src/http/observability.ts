import type { FastifyInstance } from 'fastify';
import client from 'prom-client';
import type { Db } from '../db/client.js';
import { ping } from '../db/client.js';

/** /healthz (process up), /readyz (database answers), /metrics (Prometheus). */
export function registerObservability(app: FastifyInstance, db: Db): void {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  const duration = new client.Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by route and status',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });

  app.addHook('onResponse', async (request, reply) => {
    duration.observe(
      { method: request.method, route: request.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
  });

  const hide = { hide: true } as const;
  app.get('/healthz', { schema: hide }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: hide }, async (_req, reply) => {
    try {
      await ping(db);
      return { status: 'ready' };
    } catch {
      return reply.code(503).header('Retry-After', '5').send({ status: 'database unavailable' });
    }
  });
  app.get('/metrics', { schema: hide }, async (_req, reply) =>
    reply.type(registry.contentType).send(await registry.metrics()),
  );
}
