import type { FastifyInstance } from 'fastify';

export interface InFlightRequest {
  id: string;
  method: string;
  url: string;
  age_ms: number;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The requests this process has received and not yet answered, oldest first. */
    inFlight(): InFlightRequest[];
  }
}

/**
 * Which requests are still being worked on: what a shutdown that cannot finish is waiting for
 * (main.ts logs it when the shutdown deadline passes). One map entry per request, removed when
 * its response ends (sent, or its connection closed).
 */
export function registerInFlight(app: FastifyInstance): void {
  const open = new Map<string, { method: string; url: string; since: number }>();
  app.addHook('onRequest', (request, reply, done) => {
    open.set(request.id, { method: request.method, url: request.routeOptions.url ?? request.url, since: Date.now() });
    // 'close' ends every response: sent in full, or its connection gone (a client that gave up
    // after its body was read fires neither onResponse nor onRequestAbort).
    reply.raw.once('close', () => open.delete(request.id));
    done();
  });
  app.decorate('inFlight', () => {
    const now = Date.now();
    return [...open].map(([id, r]) => ({ id, method: r.method, url: r.url, age_ms: now - r.since })).sort((a, b) => b.age_ms - a.age_ms);
  });
}
