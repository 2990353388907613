import { z } from 'zod';
import { KycLimitTable, RailFeeTable, RailLimitTable } from './core/settings.js';

/**
 * Every setting the program reads, validated once at start-up. Nothing else reads process.env.
 * Defaults suit `npm start` on a laptop: embedded database in ./data, plain HTTP on loopback.
 */
const csv = z.string().transform((s) =>
  s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean),
);

/**
 * A JSON setting, parsed and checked against its shape once, here: a typo fails at start with
 * the path of the bad entry, never at the first request that reads it.
 */
function json<T extends z.ZodType>(shape: T) {
  return z
    .string()
    .transform((text, ctx) => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        ctx.addIssue({ code: 'custom', message: 'Must be valid JSON' });
        return z.NEVER;
      }
    })
    .pipe(shape);
}

const ConfigSchema = z.object({
  PROFILE: z.enum(['development', 'production']).default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().default('127.0.0.1'),
  ROLE: z.enum(['api', 'worker', 'all']).default('all'),
  DATABASE_URL: z.string().optional(),
  DATA_DIR: z.string().default('./data'),
  DB_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(20),
  /**
   * A direct PostgreSQL URL (not through PgBouncer) for the one connection per API process that
   * LISTENs for key and settings changes; LISTEN needs a session. Unset: DATABASE_URL.
   */
  DATABASE_DIRECT_URL: z.string().optional(),
  /**
   * Read replicas for reads that tolerate lag (lists, exports, reports, reference data:
   * docs/operations.md): one or more hosts, `target_session_attrs=standby` or `prefer-standby`.
   * A replica that is down or more than DB_READ_MAX_LAG_SECONDS behind sends those reads to the primary.
   */
  DATABASE_READ_URL: z.string().optional(),
  DB_READ_MAX_LAG_SECONDS: z.coerce.number().min(0).max(3600).default(5),
  /**
   * Named prepared statements per PostgreSQL connection (each statement planned once per
   * connection, not on every call). `false` behind a PgBouncer in transaction mode that does not
   * keep prepared statements (before 1.21, or max_prepared_statements = 0).
   */
  DB_PREPARED_STATEMENTS: z
    .enum(['true', 'false'])
    .default('true')
    .transform((v) => v === 'true'),
  /**
   * How many processes (API and workers together) share the database. When set, start-up refuses
   * a deployment whose pools cannot fit in max_connections (docs/scaling.md); unset: a warning
   * when this process's own pool does not fit in the connections free now.
   */
  DB_CLUSTER_PROCESSES: z.coerce.number().int().min(1).max(10_000).optional(),
  /**
   * Redis for counters every process shares (API rate limits, dashboard login and sign-up
   * limits). Unset: each process counts on its own. Redis down: counted per process, logged.
   */
  REDIS_URL: z.string().optional(),
  REDIS_KEY_PREFIX: z.string().default('fsapi:'),
  /**
   * Webhook requests a worker process keeps in flight, and of those at most how many to one
   * endpoint (counted across every worker). The second bounds what one receiver gets at once and
   * what a hanging one holds; a busy endpoint's throughput is about this many times one request's
   * round (docs/reliability.md).
   */
  WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(256),
  WEBHOOK_ENDPOINT_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(8),
  /**
   * The bound on one endpoint's requests in flight while some of them hang: a request slower than
   * a second frees its slot for the next delivery, up to this many (docs/webhooks.md).
   */
  WEBHOOK_ENDPOINT_MAX_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(64),
  /** How long a webhook request may take (ms); the contract's figure is 15 s. */
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(15_000),
  /** Upper bound of every background job's idle wait (tests and small sandboxes shorten it). */
  JOB_INTERVAL_MAX_MS: z.coerce.number().int().min(10).max(3_600_000).optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /**
   * Most bytes of process log lines held in memory while standard output does not take them (a
   * log collector that hangs); beyond, new lines are dropped and counted on /metrics
   * (`fsapi_log_lines_dropped_total`) so the server keeps serving (lib/log-destination.ts).
   */
  LOG_BUFFER_BYTES: z.coerce
    .number()
    .int()
    .min(65_536)
    .max(1_073_741_824)
    .default(16 * 1024 * 1024),
  /** PEM files: when both are set the server speaks TLS itself and sends HSTS. */
  TLS_CERT_FILE: z.string().optional(),
  TLS_KEY_FILE: z.string().optional(),
  /** Proxy addresses whose X-Forwarded-Proto is believed (production profile). */
  TRUSTED_PROXIES: csv.default([]),
  /**
   * 32 bytes, base64: encrypts secrets at rest (stored idempotent responses holding keys, webhook
   * secrets, card data). Unset in development: a key is generated once into DATA_DIR.
   */
  SECRETS_KEY: z.string().optional(),
  /**
   * Bearer token of the operator API (/operator/v1: bank connections, files, exceptions,
   * reconciliation). Unset: the operator API does not exist (404).
   */
  OPERATOR_API_TOKEN: z.string().min(32, 'OPERATOR_API_TOKEN must be at least 32 characters').optional(),
  /** How often the worker passes over each bank connection (cut, deliver, import). */
  BANK_EXCHANGE_INTERVAL_MS: z.coerce.number().int().min(1000).max(86_400_000).default(60_000),
  IDEMPOTENCY_TTL_HOURS: z.coerce
    .number()
    .int()
    .min(1)
    .max(24 * 30)
    .default(24),
  RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(6000),
  PUBLIC_BASE_URL: z.string().optional(),
  SUPPORTED_CURRENCIES: csv.default(['NGN', 'USD', 'EUR', 'GBP', 'GHS', 'KES', 'UGX', 'ZAR', 'XOF', 'XAF', 'MXN']),
  /** FX: spread over the mid rate (basis points) and fee on the amount paid; per business: settings fx_spread_bps / fx_fee_bps. */
  FX_SPREAD_BPS: z.coerce.number().int().min(0).max(5000).default(50),
  FX_FEE_BPS: z.coerce.number().int().min(0).max(5000).default(0),
  /** How long a quote locks its rate. */
  FX_QUOTE_TTL_SECONDS: z.coerce.number().int().min(1).max(3600).default(30),
  /** How long a limit order waits for its target rate before it expires. */
  FX_LIMIT_ORDER_TTL_HOURS: z.coerce
    .number()
    .int()
    .min(1)
    .max(24 * 90)
    .default(24 * 7),
  /** Currencies every business may hold without activating a `<ccy>_account` feature. */
  HOME_CURRENCIES: csv.default(['NGN', 'USD']),
  /** Issuer BIN (6-8 digits) of the card numbers this program issues; the default is a sandbox test BIN. */
  CARD_BIN: z
    .string()
    .regex(/^\d{6,8}$/, 'CARD_BIN must be 6-8 digits')
    .default('49000088'),
  /** Hours after which an approved card authorization that was never captured is released. */
  CARD_AUTH_EXPIRY_HOURS: z.coerce
    .number()
    .int()
    .min(1)
    .max(24 * 31)
    .default(7 * 24),
  /** KYC compliance: minimum age, and per-country exceptions as `CC:AGE` pairs (e.g. `US:21`). */
  KYC_MIN_AGE: z.coerce.number().int().min(0).max(120).default(18),
  KYC_MIN_AGE_BY_COUNTRY: csv
    .refine((pairs) => pairs.every((p) => /^[A-Za-z]{2}:\d{1,3}$/.test(p)), 'Must be CC:AGE pairs, such as US:21,GB:18')
    .default([]),
  /** Countries of residence the business may onboard (ISO 3166-1 alpha-2). */
  KYC_SUPPORTED_COUNTRIES: csv.default([
    'NG',
    'GH',
    'KE',
    'UG',
    'ZA',
    'CI',
    'SN',
    'CM',
    'BJ',
    'TG',
    'ML',
    'BF',
    'NE',
    'GA',
    'CG',
    'TD',
    'GQ',
    'CF',
    'RW',
    'TZ',
    'EG',
    'MA',
    'US',
    'CA',
    'MX',
    'GB',
    'IE',
    'DE',
    'FR',
    'ES',
    'IT',
    'NL',
    'BE',
    'PT',
    'AT',
    'FI',
  ]),
  /** OFAC SDN CSV file(s) (sdn.csv[,alt.csv]); unset: the fictional sample in src/lib/sanctions. */
  SANCTIONS_LIST_FILE: z.string().optional(),
  /** Jaro-Winkler similarity at or above which a name is a sanctions hit (manual review). */
  SANCTIONS_MATCH_THRESHOLD: z.coerce.number().min(0.5).max(1).default(0.92),
  /** Lifetime of a hosted verification link (web_url). */
  KYC_LINK_TTL_MINUTES: z.coerce
    .number()
    .int()
    .min(1)
    .max(60 * 24 * 30)
    .default(60 * 24),
  /** Largest decoded KYC document. */
  KYC_DOCUMENT_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(10 * 1024 * 1024)
    .default(10 * 1024 * 1024),
  /**
   * Transaction limits per KYC level and currency, in major units, as JSON:
   * {"basic": {"USD": {"per_transaction": "1000", "daily": "5000"}, ...}, "intermediate": {...}}.
   * A business's `kyc_limits` setting (same shape) overrides entries. Unset: built-in defaults.
   */
  KYC_LIMITS: json(KycLimitTable).optional(),
  /** Sandbox rails: how long a payout, a payee verification or a mobile money prompt takes to settle on its own. */
  SANDBOX_RAIL_DELAY_MS: z.coerce.number().int().min(0).max(86_400_000).default(5000),
  /** Collections not paid within this many minutes expire. */
  COLLECTION_EXPIRY_MINUTES: z.coerce
    .number()
    .int()
    .min(1)
    .max(60 * 24 * 30)
    .default(60 * 24),
  /**
   * Default payout fees per rail and currency, in the fee-rule format of core/settings.ts:
   * {"<rail>|*": {"<currency>|*": {"flat": "1.00", "bps": 50, "min": "…", "max": "…"}}}. A business's
   * `fees.payout_<rail>` setting replaces the rule of its rail.
   */
  PAYOUT_FEES: json(RailFeeTable).prefault('{"*":{"*":{"bps":50}}}'),
  /**
   * Default largest single payout per rail and source currency (major units):
   * {"<rail>|*": {"<currency>|*": "100000"}}. A business's `payout_limits` setting (same shape) wins.
   */
  PAYOUT_LIMITS: json(RailLimitTable).prefault(
    '{"*":{"USD":"100000","EUR":"100000","GBP":"100000","NGN":"150000000","GHS":"1000000","KES":"10000000","UGX":"300000000","ZAR":"1500000"}}',
  ),
  /** Default collection fee (percent of the amount), overridable by the `collection_fee_percent` setting. */
  COLLECTION_FEE_PERCENT: z
    .string()
    .regex(/^\d{1,2}(\.\d{1,2})?$/)
    .default('1.5'),
  /**
   * The batch posting path (docs/money-path.md): up to SIZE money movements share one transaction
   * and its statements; 1 runs each alone. LANES: batches in flight at once on PostgreSQL (PGlite
   * has one). More lanes are not faster: concurrent batches wait on each other's balance rows,
   * split the waiting requests into smaller batches (more statements and commits per transfer) and
   * share the database's CPU. The default of 1 lane is what served most on a two-core server
   * (`npm run bench -- spread hot`, docs/benchmarks.md#the-figures-behind-the-defaults); a larger server may want more.
   */
  TRANSFER_BATCH_SIZE: z.coerce.number().int().min(1).max(60).default(32),
  TRANSFER_BATCH_LANES: z.coerce.number().int().min(1).max(64).default(1),
  /**
   * Spare lanes (PostgreSQL): a batch still running after STALL_MS, and after three times as long
   * as batches took lately, lets the requests queued behind it start in another batch, up to
   * SPARE_LANES more at once. One commit held up by the disk then does not hold every request that
   * arrives meanwhile: their commits join its WAL flush (docs/money-path.md). 0 spare lanes: off.
   */
  TRANSFER_BATCH_SPARE_LANES: z.coerce.number().int().min(0).max(16).default(3),
  TRANSFER_BATCH_STALL_MS: z.coerce.number().int().min(1).max(10_000).default(10),
  /**
   * Bulks (`POST /v1/transfers/bulk`) worked on at once in this process; the others wait their
   * turn. Each holds its items, their rows and its answer until it ends, so memory grows with how
   * many run together, and bulks over the same accounts wait on each other's locks anyway: one at
   * a time served more, with less memory (docs/benchmarks.md#the-figures-behind-the-defaults).
   */
  TRANSFER_BULK_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(1),
  /** API request log (dashboard): `off` stops recording; rows older than the retention are deleted. */
  REQUEST_LOG: z.enum(['on', 'off']).default('on'),
  REQUEST_LOG_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(30),
  /**
   * Optional mail for dashboard invitations and password reset links (they are always shown to
   * the person who made them as well): `smtp://user:pass@host:587` (STARTTLS when offered) or
   * `smtps://user:pass@host:465` (TLS from the start). Unset: nothing is mailed. SMTP_FROM is the
   * sender, `address@example.com` or `Name <address@example.com>`; required with SMTP_URL.
   */
  SMTP_URL: z
    .string()
    .refine((s) => {
      try {
        const url = new URL(s);
        return (url.protocol === 'smtp:' || url.protocol === 'smtps:') && url.hostname !== '';
      } catch {
        return false;
      }
    }, 'Must be an smtp:// or smtps:// URL with a host (smtp://user:pass@host:587)')
    .optional(),
  SMTP_FROM: z
    .string()
    .trim()
    .refine(
      (s) => /^[^\s<>@]+@[^\s<>@]+\.[^\s<>@]+$/.test(s) || /^[^<>\r\n]*<[^\s<>@]+@[^\s<>@]+\.[^\s<>@]+>$/.test(s),
      'Must be an email address, or Name <address>',
    )
    .optional(),
  /**
   * Lets sandbox webhook endpoints point at this machine's loopback (a receiver on the developer's
   * laptop); on by default, it takes effect only while the server listens on loopback and PROFILE is not
   * production (`webhookLoopbackAllowed`): a server others can reach never lets their sandbox
   * keys probe its own host.
   */
  WEBHOOK_SANDBOX_LOOPBACK: z
    .enum(['true', 'false'])
    .default('true')
    .transform((v) => v === 'true'),
  /** Whether `npm start` creates a demo business on an empty database. */
  DEMO_TENANT: z
    .enum(['true', 'false'])
    .default('true')
    .transform((v) => v === 'true'),
});

export type Config = z.infer<typeof ConfigSchema>;

const LOOPBACK_HOSTS = /^(?:localhost|127(?:\.\d{1,3}){3}|::1|\[::1\])$/i;

/** Whether sandbox webhooks may reach loopback: asked for, on a loopback-only server, not in production. */
export function webhookLoopbackAllowed(config: Pick<Config, 'WEBHOOK_SANDBOX_LOOPBACK' | 'PROFILE' | 'HOST'>): boolean {
  return config.WEBHOOK_SANDBOX_LOOPBACK && config.PROFILE !== 'production' && LOOPBACK_HOSTS.test(config.HOST);
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<Config> = {}): Config {
  const parsed = ConfigSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new Error(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const config = { ...parsed.data, ...overrides };
  // Development logs warnings and errors unless LOG_LEVEL says otherwise: an access line per
  // request would scroll the start banner, with its keys shown only once, off the screen.
  if (env.LOG_LEVEL === undefined && overrides.LOG_LEVEL === undefined && config.PROFILE === 'development') config.LOG_LEVEL = 'warn';
  if ((config.TLS_CERT_FILE === undefined) !== (config.TLS_KEY_FILE === undefined)) {
    throw new Error('Invalid configuration: TLS_CERT_FILE and TLS_KEY_FILE must be set together');
  }
  if (config.SMTP_URL !== undefined && config.SMTP_FROM === undefined) {
    throw new Error('Invalid configuration: SMTP_FROM (the sender address) is required with SMTP_URL');
  }
  if (config.SMTP_FROM !== undefined && config.SMTP_URL === undefined) {
    throw new Error('Invalid configuration: SMTP_FROM is set but SMTP_URL is not: set both to mail links, or neither');
  }
  if (config.PROFILE === 'production' && config.SMTP_URL !== undefined && !config.PUBLIC_BASE_URL) {
    throw new Error('Invalid configuration: PUBLIC_BASE_URL is required with SMTP_URL in production (mailed links point there)');
  }
  if (config.PROFILE === 'production' && !config.SECRETS_KEY) {
    throw new Error('Invalid configuration: SECRETS_KEY is required with PROFILE=production');
  }
  return config;
}
