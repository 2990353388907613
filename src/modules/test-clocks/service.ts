import type { Queryable, Trx } from '../../db/client.js';
import type { Scope } from '../../core/context.js';
import { AppError, notFound, validationError } from '../../core/errors.js';
import type { Page, PageQuery } from '../../db/pagination.js';
import { newId } from '../../lib/ids.js';
import * as repo from './repo.js';
import { MAX_ADVANCE_DAYS, type CreateTestClockBody, type TestClockResponse } from './schema.js';

/**
 * Sandbox test clocks (docs/time.md). A clock's time only moves forward; an advance is accepted
 * here (status `advancing`) and walked by the clock worker (workers/test-clocks.ts), which fires
 * what falls due for the sandbox business attached to the clock through the real-time workers'
 * own code, at the clock's time.
 */

export { nextDueAfter, leaseAdvancingClock, updateClock } from './repo.js';

const DAY_MS = 86_400_000;

export function toResponse(row: repo.ClockRow): TestClockResponse {
  return {
    id: row.id,
    name: row.name,
    frozen_time: row.frozen_time.toISOString(),
    status: row.status,
    advancing_to: row.target_time?.toISOString() ?? null,
    attached: row.attached,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** Test clocks exist in sandbox only: a live key finds no such route (the contract's simulations). */
function requireSandbox(ctx: Scope): void {
  if (ctx.environment !== 'sandbox') throw notFound('Route');
}

async function lockClock(trx: Trx, ctx: Scope, id: string): Promise<repo.ClockRow> {
  requireSandbox(ctx);
  const row = await repo.findClock(trx, ctx, id, 'update');
  if (!row) throw notFound('Test clock');
  return row;
}

function refuseWhileAdvancing(row: repo.ClockRow, action: string): void {
  if (row.status === 'advancing') {
    throw new AppError('invalid_state_transition', `A test clock cannot be ${action} while it is advancing; wait for status ready`);
  }
}

export async function createClock(trx: Trx, ctx: Scope, body: CreateTestClockBody): Promise<TestClockResponse> {
  requireSandbox(ctx);
  const row = await repo.insertClock(trx, ctx, { id: newId(), name: body.name ?? null, frozen_time: new Date(body.frozen_time) });
  return toResponse(row);
}

export async function getClock(db: Queryable, ctx: Scope, id: string): Promise<TestClockResponse> {
  requireSandbox(ctx);
  const row = await repo.findClock(db, ctx, id);
  if (!row) throw notFound('Test clock');
  return toResponse(row);
}

export async function listClocks(db: Queryable, ctx: Scope, query: PageQuery): Promise<Page<TestClockResponse>> {
  requireSandbox(ctx);
  const page = await repo.listClocks(db, ctx, query);
  return { ...page, items: page.items.map(toResponse) };
}

/** Starts an advance: forward only, at most MAX_ADVANCE_DAYS, one at a time. */
export async function advanceClock(trx: Trx, ctx: Scope, id: string, frozenTime: string): Promise<TestClockResponse> {
  const row = await lockClock(trx, ctx, id);
  refuseWhileAdvancing(row, 'advanced');
  const target = new Date(frozenTime);
  const field = (message: string) => validationError([{ field: 'frozen_time', code: 'invalid', message }]);
  if (target.getTime() <= row.frozen_time.getTime()) {
    throw field(`A test clock only moves forward: give an instant after ${row.frozen_time.toISOString()}`);
  }
  if (target.getTime() - row.frozen_time.getTime() > MAX_ADVANCE_DAYS * DAY_MS) {
    throw field(`One advance moves a test clock at most ${MAX_ADVANCE_DAYS} days; advance in several steps`);
  }
  const updated = await repo.updateClock(trx, ctx, id, { status: 'advancing', target_time: target, lease_until: null });
  return toResponse(updated!);
}

/** Puts the sandbox business on this clock: its due work then moves only when the clock advances. */
export async function attachClock(trx: Trx, ctx: Scope, id: string): Promise<TestClockResponse> {
  const row = await lockClock(trx, ctx, id);
  if (row.attached) return toResponse(row);
  refuseWhileAdvancing(row, 'attached');
  const other = await repo.attachedClock(trx, ctx);
  if (other) {
    throw new AppError('conflict', `The sandbox business is already attached to test clock ${other.id}; detach it or delete it first`);
  }
  return toResponse((await repo.updateClock(trx, ctx, id, { attached: true }))!);
}

/** Gives the sandbox business back to real time: what the clock left due then falls due at once. */
export async function detachClock(trx: Trx, ctx: Scope, id: string): Promise<TestClockResponse> {
  const row = await lockClock(trx, ctx, id);
  refuseWhileAdvancing(row, 'detached');
  if (!row.attached) return toResponse(row);
  return toResponse((await repo.updateClock(trx, ctx, id, { attached: false }))!);
}

/** Deletes a clock (detaching its business first); objects that ran on it stay as they are. */
export async function deleteClock(trx: Trx, ctx: Scope, id: string): Promise<{ id: string; deleted: boolean }> {
  const row = await lockClock(trx, ctx, id);
  refuseWhileAdvancing(row, 'deleted');
  await repo.deleteClock(trx, ctx, id);
  return { id, deleted: true };
}
