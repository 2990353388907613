import { z } from 'zod';
import { DateParam } from '../../db/pagination.js';

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;

/** An instant: RFC 3339 with a time and an offset. */
export const Instant = z
  .string()
  .refine((s) => RFC3339.test(s) && !Number.isNaN(Date.parse(s)), 'Use RFC 3339 with a time and offset (2024-01-31T23:59:59Z)');

export const BalancesQuery = z.strictObject({
  as_of: Instant.optional().describe('The instant the balances are read at (RFC 3339). Default: now.'),
  from: DateParam.optional().describe('With `to`: the period whose opening and closing balances and totals are read'),
  to: DateParam.optional().describe('End of the period (a date-only `to` includes that whole day). Default: now.'),
});
export type BalancesQuery = z.infer<typeof BalancesQuery>;

export const BalanceAsOf = z
  .object({
    account_id: z.string(),
    currency: z.string(),
    as_of: z.string().describe('The instant read, RFC 3339 UTC with milliseconds'),
    balance: z.string().describe('Posted balance at that instant'),
    available_balance: z.string().describe('Posted balance minus the funds held at that instant'),
  })
  .meta({ id: 'AccountBalanceAsOf' });

export const BalancePeriod = z
  .object({
    account_id: z.string(),
    currency: z.string(),
    from: z.string(),
    to: z.string().describe('End of the period, exclusive; never later than now'),
    opening_balance: z.string(),
    opening_available_balance: z.string(),
    closing_balance: z.string(),
    closing_available_balance: z.string(),
    total_credits: z.string(),
    total_debits: z.string(),
    credit_count: z.number().int(),
    debit_count: z.number().int(),
  })
  .meta({ id: 'AccountBalancePeriod' });

export const BalancesResponse = z.union([BalanceAsOf, BalancePeriod]);
export type BalancesResponse = z.infer<typeof BalancesResponse>;

export const StatementQuery = z.strictObject({
  month: z
    .string()
    .regex(/^\d{4}-(0[1-9]|1[0-2])$/, 'Use YYYY-MM')
    .optional()
    .describe('A calendar month (UTC). Default: the current month, up to now.'),
  from: DateParam.optional().describe('Instead of month: start of the period'),
  to: DateParam.optional().describe('End of the period (a date-only `to` includes that whole day). Default: now.'),
  format: z.enum(['json', 'csv', 'pdf']).optional().describe('Overrides the Accept header: json (default), csv or pdf'),
});
export type StatementQuery = z.infer<typeof StatementQuery>;
