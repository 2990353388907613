import { z } from 'zod';

/** A bank connection as the operator configures it (CLI and operator API). */
export const ConnectionInput = z
  .strictObject({
    name: z.string().trim().min(1).max(140),
    environment: z.enum(['live', 'sandbox']).default('live'),
    account_name: z.string().trim().min(1).max(140),
    iban: z
      .string()
      .transform((s) => s.replace(/\s/g, '').toUpperCase())
      .pipe(z.string().regex(/^[A-Z]{2}\d{2}[A-Z0-9]{10,30}$/, 'Not an IBAN'))
      .optional(),
    account_number: z
      .string()
      .trim()
      .regex(/^[A-Za-z0-9-]{4,34}$/, 'Not an account number')
      .optional(),
    bic: z
      .string()
      .trim()
      .toUpperCase()
      .regex(/^[A-Z]{6}[A-Z0-9]{2}([A-Z0-9]{3})?$/, 'Not a BIC')
      .optional(),
    bank_code: z.string().trim().min(1).max(35).optional(),
    currency: z
      .string()
      .trim()
      .toUpperCase()
      .regex(/^[A-Z]{3}$/),
    rails: z.array(z.enum(['sepa', 'swift', 'bank_transfer', 'ach', 'wire', 'fps', 'globalbank'])).min(1),
    transport: z.discriminatedUnion('type', [
      z.strictObject({ type: z.literal('folder'), outbox: z.string().min(1), inbox: z.string().min(1) }),
      z.strictObject({
        type: z.literal('sftp'),
        host: z.string().min(1),
        port: z.number().int().min(1).max(65535).default(22),
        username: z.string().min(1),
        private_key_path: z.string().min(1),
        host_key_sha256: z
          .string()
          .regex(/^SHA256:[A-Za-z0-9+/]{43}$/)
          .optional(),
        remote_outbox: z.string().min(1).default('outbox'),
        remote_inbox: z.string().min(1).default('inbox'),
      }),
    ]),
  })
  .refine((c) => c.iban || c.account_number, { message: 'Give the iban or the account_number of the platform account', path: ['iban'] });
export type ConnectionInput = z.input<typeof ConnectionInput>;

export const ExceptionAssignInput = z.strictObject({ account_id: z.uuid(), note: z.string().max(500).optional() });
export const ExceptionReturnInput = z.strictObject({ note: z.string().max(500).optional() });
