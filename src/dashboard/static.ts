import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';

const DIR = join(dirname(fileURLToPath(import.meta.url)), 'static');
/** Read once at start-up: two small files, served from memory, no outside resources. */
const FILES = {
  'app.css': { type: 'text/css; charset=utf-8', body: readFileSync(join(DIR, 'app.css')) },
  'app.js': { type: 'text/javascript; charset=utf-8', body: readFileSync(join(DIR, 'app.js')) },
} as const;

export async function staticRoutes(app: FastifyInstance) {
  for (const [name, file] of Object.entries(FILES)) {
    app.get(`/static/${name}`, { config: { dashboardPublic: true } }, async (_request, reply) =>
      reply.header('Cache-Control', 'public, max-age=300').type(file.type).send(file.body),
    );
  }
}
