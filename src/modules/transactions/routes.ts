import { Readable } from 'node:stream';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Deps } from '../../http/deps.js';
import { ok } from '../../http/envelope.js';
import { routes } from '../../http/route.js';
import { pageSchema } from '../../db/pagination.js';
import { ExportQuery, ListTransactionsQuery, TransactionIdParams, TransactionResponse, VolumeQuery, VolumeResponse } from './schema.js';
import * as service from './service.js';
import { csvHeader, csvLine } from './csv.js';

const tags = ['Transactions'];

const csvChunk = (rows: TransactionResponse[]) => rows.map(csvLine).join('');
/** JSON array members; the very first one of the file has no leading comma. */
const jsonChunk = (rows: TransactionResponse[], fileStart: boolean) =>
  rows.map((row, i) => `${fileStart && i === 0 ? '' : ','}\n${JSON.stringify(row)}`).join('');

export function transactionRoutes(deps: Deps): FastifyPluginAsyncZod {
  return async (app) => {
    const r = routes(app, tags);
    r.get(
      '/v1/transactions',
      { summary: 'List transactions', querystring: ListTransactionsQuery, data: pageSchema(TransactionResponse), errors: [] },
      async (req) => ok(await service.listTransactions(deps.readDb(), req.ctx, req.query)),
    );

    r.get(
      '/v1/transactions/volume',
      {
        summary: 'Transaction volume per currency',
        description:
          'Each movement counts once (a transfer is not counted on both of its accounts). Amounts in different currencies are never added: see by_currency.',
        querystring: VolumeQuery,
        data: VolumeResponse,
        errors: [],
      },
      async (req) => ok(await service.volume(deps.readDb(), req.ctx, req.query)),
    );

    app.get(
      '/v1/transactions/export',
      {
        schema: {
          tags,
          summary: 'Export transactions',
          description: 'Streams a CSV (default) or JSON array file of every matching transaction, newest first, as an attachment.',
          querystring: ExportQuery,
          errors: [],
        },
      },
      async (req, reply) => {
        const format = req.query.export_format;
        const date = new Date().toISOString().slice(0, 10);
        const pages = service.exportPages(deps.readDb(), req.ctx, req.query);
        // The first page is read and rendered before the status is sent: a failure there is a
        // normal error answer. A failure on a later page errors the stream after the headers
        // went out; Fastify then destroys the socket, so the chunked body never ends cleanly and
        // the client sees a broken transfer, never a short file that looks complete.
        const first = await pages.next();
        const firstRows = first.done ? [] : first.value;
        const head = format === 'csv' ? csvHeader() + csvChunk(firstRows) : `[${jsonChunk(firstRows, true)}`;
        let sent = firstRows.length;
        async function* body() {
          yield head;
          for await (const page of pages) {
            yield format === 'csv' ? csvChunk(page) : jsonChunk(page, sent === 0);
            sent += page.length;
          }
          if (format === 'json') yield '\n]\n';
        }
        return reply
          .header('Content-Disposition', `attachment; filename="transactions_export_${date}.${format}"`)
          .type(format === 'csv' ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8')
          .send(Readable.from(body()));
      },
    );

    r.get(
      '/v1/transactions/:transaction_id',
      { summary: 'Get a transaction', params: TransactionIdParams, data: TransactionResponse, errors: [] },
      async (req) => ok(await service.getTransaction(deps.db, req.ctx, req.params.transaction_id)),
    );
  };
}
