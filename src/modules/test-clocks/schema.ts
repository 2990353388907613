import { z } from 'zod';
import { PageQuery } from '../../db/pagination.js';
import { UuidParam } from '../../lib/validators.js';
import { Instant } from '../statements/schema.js';

/** The most one advance may move a clock: two months of the longest month pair. */
export const MAX_ADVANCE_DAYS = 62;

export const CreateTestClockBody = z
  .strictObject({
    frozen_time: Instant.describe('The clock starts at this instant (RFC 3339).'),
    name: z.string().trim().min(1).max(100).optional(),
  })
  .meta({ id: 'CreateTestClock' });
export type CreateTestClockBody = z.infer<typeof CreateTestClockBody>;

export const AdvanceTestClockBody = z
  .strictObject({
    frozen_time: Instant.describe(`The instant to move to: after the current one, at most ${MAX_ADVANCE_DAYS} days later.`),
  })
  .meta({ id: 'AdvanceTestClock' });

export const TestClockIdParams = z.strictObject({ test_clock_id: UuidParam });

export const ListTestClocksQuery = PageQuery;

export const TestClockResponse = z
  .object({
    id: z.string(),
    name: z.string().nullable(),
    frozen_time: z.string().describe('The time the clock shows (RFC 3339, UTC).'),
    status: z.enum(['ready', 'advancing']).describe('`advancing` while an advance runs; `ready` once it reached its target.'),
    advancing_to: z.string().nullable().describe('The target of the advance under way, else null.'),
    attached: z.boolean().describe("Whether the sandbox business runs on this clock (the worker's due work moves only with it)."),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'TestClock' });
export type TestClockResponse = z.infer<typeof TestClockResponse>;

export const DeletedTestClockResponse = z.object({ id: z.string(), deleted: z.boolean() }).meta({ id: 'DeletedTestClock' });
