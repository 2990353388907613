import type { FastifyInstance } from 'fastify';
import type { Deps } from '../app.js';
import { unavailable } from './list-view.js';
import { sendPage, sessionOf } from './routes.js';
import type { DashboardService } from './service.js';

export function webhookRoutes(_deps: Deps, _service: DashboardService) {
  return async function plugin(app: FastifyInstance) {
    app.get('/webhooks', async (request, reply) => sendPage(reply, unavailable(sessionOf(request), 'webhooks', 'Webhooks')));
  };
}
