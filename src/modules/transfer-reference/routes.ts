import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Deps } from '../../http/deps.js';
import { ok } from '../../http/envelope.js';
import { routes } from '../../http/route.js';
import {
  AddressCountriesQuery,
  AddressCountry,
  TransferCountriesQuery,
  TransferCountry,
  TransferCurrenciesQuery,
  TransferCurrency,
  TransferRatePage,
  TransferRatesQuery,
} from './schema.js';
import * as service from './service.js';

const tags = ['Transfers'];
/** Reference data a public key may read (docs/api-rules.md#keys-and-environments). */
const publicRead = { publicKeyAllowed: true };

export function transferReferenceRoutes(deps: Deps): FastifyPluginAsyncZod {
  return async (app) => {
    const r = routes(app, tags);
    r.get(
      '/v1/transfer/rates',
      {
        config: publicRead,
        summary: 'Get transfer rates',
        description:
          'Per payout country and currency, what a payee receives per 1 EUR and per 1 USD sent: the customer rate an international payout uses now.',
        querystring: TransferRatesQuery,
        data: TransferRatePage,
        errors: [],
      },
      async (req) => ok(await service.listRates(deps.db, req.ctx, req.query, deps.config)),
    );

    r.get(
      '/v1/transfer/supported-currencies',
      {
        config: publicRead,
        summary: 'Get supported transfer currencies',
        querystring: TransferCurrenciesQuery,
        data: z.object({ currencies: z.array(TransferCurrency) }),
        errors: [],
      },
      async (req) => ok(service.listCurrencies(req.query, deps.config)),
    );

    r.get(
      '/v1/transfer/supported-countries',
      {
        config: publicRead,
        summary: 'Get supported transfer countries',
        querystring: TransferCountriesQuery,
        data: z.object({ countries: z.array(TransferCountry) }),
        errors: [],
      },
      async (req) => ok(service.listCountries(req.query, deps.config)),
    );

    r.get(
      '/v1/transfer/supported-countries-for-address',
      {
        config: publicRead,
        summary: 'Get supported countries for recipient addresses',
        querystring: AddressCountriesQuery,
        data: z.object({ countries: z.array(AddressCountry) }),
        errors: [],
      },
      async (req) => ok(service.listAddressCountries(req.query)),
    );
  };
}
