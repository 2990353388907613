import type { DatabaseHandle } from '../db/client.js';
import { AppError } from '../core/errors.js';
import type { Sealer } from '../lib/crypto.js';

/** One command: its arguments after the command's words, and the open database. */
export type Command = (args: string[], handle: DatabaseHandle) => Promise<unknown>;

export const USAGE = `Usage: npm run --silent cli -- <command> [options]

  tenant create --name NAME [--json]          create a business with sandbox and live key pairs
  tenant settings --tenant ID --set KEY=JSON  set a per-business setting (fees, limits, quotas)
  keys rotate --tenant ID --env sandbox|live [--expire-in 0|3600|86400|604800] [--json]
  kyc review --tenant ID --customer ID --outcome approved|rejected [--env live|sandbox] [--level basic|intermediate] [--json]
                                              decide a KYC case waiting in manual review (default --env live)
  dashboard-user create --tenant ID --email EMAIL [--json]
                                              a dashboard login for a business; the password is read
                                              from DASHBOARD_PASSWORD (never an argument: ps shows those)
  dashboard-user reset-link --email EMAIL [--json]
                                              print a one-time password reset link (valid 24 h; prefix it
                                              with the dashboard's origin); no mail is sent
  ops operators add --email EMAIL --role compliance|operations|admin|viewer [--json]
                                              an operator of the console at /ops: prints a one-time setup
                                              link (valid 24 h; prefix it with the server's origin)
  ops operators reset-link --email EMAIL [--json]
                                              a new setup link (the old password and second factor stop working)
  migrate                                     apply pending database migrations
  payouts settle|fail|return --transfer ID [--reason TEXT] [--json]
                                              record a live (manual connector) payout's result
  ledger reconcile [--tenant ID] [--json]     prove zero-sum per transaction and balance = sum of entries (exit 1 on a mismatch)
  bank connections add --config JSON|@FILE    add a sponsor bank connection (docs/going-live.md)
  bank connections list|enable|disable [--connection ID] [--json]
  bank exchange --connection ID [--json]      now: cut a pain.001 of waiting payouts, deliver it, import the inbox
  bank import --connection ID --file PATH [--json]
                                              import one pain.002 / camt.054 / camt.053 file
  bank files [--connection ID] [--json]       files sent and received
  bank exceptions [list] [--status open|assigned|returned] [--json]
  bank exceptions assign --exception ID --account ID [--note TEXT] [--json]
  bank exceptions return --exception ID [--note TEXT] [--json]
                                              book an unmatched credit to an account, or return it to the payer
  bank reconciliations [--connection ID] [--json]
                                              statements against the ledger (exit 1 when the newest disagrees)
`;

export function fail(message: string): never {
  console.error(`${message}\n\n${USAGE}`);
  process.exit(2);
}

/**
 * Output waits until the database is closed (everything written is on disk): a command never
 * reports success for work that is not durable.
 */
export const output: string[] = [];
export function print(value: unknown, json: boolean, text: () => string) {
  output.push(json ? JSON.stringify(value) : text());
}

/** An operator command's refusal (AppError) is printed as the usage error it is, not a crash. */
export async function operatorCall<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof AppError) {
      const details = err.details.map((d) => `  ${d.field}: ${d.message}`).join('\n');
      fail(`${err.message}${details ? `\n${details}` : ''}`);
    }
    throw err;
  }
}

/** The deployment's data key (openRuntime), for commands that book through other modules. */
export const runtime: { sealer?: Sealer } = {};
