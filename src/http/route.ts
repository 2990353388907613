import type {
  ContextConfigDefault,
  FastifyRequest,
  FastifyContextConfig,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
  RouteGenericInterface,
  RouteHandlerMethod,
} from 'fastify';
import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import type { ErrorCode } from '../core/errors.js';
import { envelope } from './envelope.js';

/** The Fastify instance a route plugin receives (Zod type provider). */
export type App = Parameters<FastifyPluginAsyncZod>[0];

/** A /v1 route in one object: the schema's parts flat, the success `data` wrapped in the envelope. */
export interface RouteDef<B, P, Q, D extends z.ZodType> {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: string;
  tags: string[];
  summary: string;
  description?: string;
  body?: B;
  params?: P;
  querystring?: Q;
  /** The success answer's `data`: the route answers 200 `{data, error: null}`. */
  data: D;
  /** Answers 201 instead of 200 (the contract's creations that say so). */
  created?: boolean;
  /** Also answers 202 with the same `data` (work accepted, finished in the background). */
  accepted?: boolean;
  /** The business codes the route can answer (see http/route-errors.ts). */
  errors: readonly ErrorCode[];
  config?: FastifyContextConfig;
  bodyLimit?: number;
  /** Runs before anything else of the route (e.g. a sandbox-only route's 404 for a live key). */
  onRequest?: (request: FastifyRequest) => Promise<void>;
}

type Handler<B, P, Q, D extends z.ZodType> = RouteHandlerMethod<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  RouteGenericInterface,
  ContextConfigDefault,
  {
    body: B;
    params: P;
    querystring: Q;
    response: { 200: ReturnType<typeof envelope<D>>; 201: ReturnType<typeof envelope<D>>; 202: ReturnType<typeof envelope<D>> };
  },
  ZodTypeProvider
>;

/** Registers the route with the same Fastify schema a hand-written `app.get(url, {schema}, handler)` would have. */
function route<D extends z.ZodType, B = undefined, P = undefined, Q = undefined>(
  app: App,
  def: RouteDef<B, P, Q, D>,
  handler: Handler<B, P, Q, D>,
): void {
  const { method, url, config, bodyLimit, onRequest, data, created, accepted, body, params, querystring, ...docs } = def;
  app.route({
    method,
    url,
    ...(config ? { config } : {}),
    ...(bodyLimit ? { bodyLimit } : {}),
    ...(onRequest ? { onRequest } : {}),
    schema: {
      ...docs,
      ...(body ? { body } : {}),
      ...(params ? { params } : {}),
      ...(querystring ? { querystring } : {}),
      response: { [created ? 201 : 200]: envelope(data), ...(accepted ? { 202: envelope(data) } : {}) },
    },
    handler: handler as never,
  });
}

type Method = RouteDef<unknown, unknown, unknown, z.ZodType>['method'];
type Def<B, P, Q, D extends z.ZodType> = Omit<RouteDef<B, P, Q, D>, 'method' | 'url' | 'tags'> & { tags?: string[] };

/**
 * `const r = routes(app, ['Accounts'])`, then `r.post(url, {summary, body, data, errors}, handler)`:
 * the tags given once, the rest of the schema flat. Types of req.body/params/query are inferred as
 * with `app.post`.
 */
export function routes(app: App, tags: string[]) {
  const add =
    (method: Method) =>
    <D extends z.ZodType, B = undefined, P = undefined, Q = undefined>(url: string, def: Def<B, P, Q, D>, handler: Handler<B, P, Q, D>) =>
      route(app, { tags, ...def, method, url }, handler);
  return { get: add('GET'), post: add('POST'), put: add('PUT'), patch: add('PATCH'), delete: add('DELETE') };
}
