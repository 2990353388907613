import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DatabaseHandle } from '../../src/db/client.js';
import { pgliteTimestampText, postgresTimestampText, timestampText, type TimestampText } from '../../src/db/timestamp-text.js';
import { openTestDatabase } from '../harness.js';

/**
 * What a timestamp column's value gave the API before: the driver's Date, written by toISOString,
 * or its failure (by kind: its message names the expression that failed, and a read answers 500 either way).
 */
type Outcome = { text: string } | { error: string };

function outcome(make: () => string): Outcome {
  try {
    return { text: make() };
  } catch (err) {
    return { error: (err as Error).name };
  }
}

const postgresParse = pg.types.getTypeParser(1184, 'text') as (text: string) => unknown;
const pgliteParse = async () => {
  const { types } = await import('@electric-sql/pglite');
  return types.parsers[types.TIMESTAMPTZ] as (text: string) => unknown;
};

/** The timestamptz texts PostgreSQL writes in each date style, time zone and era, and a few it never writes. */
const TEXTS = [
  '2026-12-02 16:25:36+00',
  '2026-12-02 16:25:36.1+00',
  '2026-12-02 16:25:36.12+00',
  '2026-12-02 16:25:36.123+00',
  '2026-12-02 16:25:36.1234+00',
  '2026-12-02 16:25:36.12345+00',
  '2026-12-02 16:25:36.123456+00',
  '2026-12-02 16:25:36.999999+00',
  '1000-01-01 00:00:00+00',
  '9999-12-31 23:59:59.999999+00',
  '0999-12-31 23:59:59.5+00',
  '0099-06-15 12:00:00+00',
  '0001-01-01 00:00:00+00',
  '0001-01-01 00:00:00+00 BC',
  '4713-11-24 00:00:00+00 BC',
  '10000-01-01 00:00:00+00',
  '294276-12-31 23:59:59.999999+00',
  '2026-12-02 21:55:36.123456+05:30',
  '2026-12-02 13:55:36.1+03:30',
  '2026-12-02 08:25:36-08',
  '2026-12-02 16:25:36+00:00',
  '2026-12-02 17:25:36.5+01',
  '1883-11-18 11:51:08-04:56:02',
  'infinity',
  '-infinity',
  '12/02/2026 16:25:36.123456 UTC',
  'Wed Dec 02 16:25:36.123456 2026 UTC',
  '02.12.2026 16:25:36.123456 UTC',
  '2026-12-02T16:25:36.123Z',
  '2026-12-02 16:25:36.1234567+00',
  '',
];

describe('timestamptz text to the API ISO text (db/timestamp-text.ts)', () => {
  const drivers: [string, TimestampText, () => Promise<(text: string) => unknown>][] = [
    ['postgres', postgresTimestampText, async () => postgresParse],
    ['pglite', pgliteTimestampText, pgliteParse],
  ];

  for (const [name, isoText, parser] of drivers) {
    it(`${name}: the same text (or the same failure) as the driver's Date written by toISOString`, async () => {
      const parse = await parser();
      for (const text of TEXTS) {
        expect(
          outcome(() => isoText(text)),
          text,
        ).toEqual(outcome(() => (parse(text) as Date).toISOString()));
      }
    });

    it(`${name}: every microsecond of a second, every fraction length`, async () => {
      const parse = await parser();
      for (let us = 0; us < 1_000_000; us += 1) {
        const fraction = String(us).padStart(6, '0').replace(/0+$/, '');
        const text = `2026-02-28 23:59:59${fraction ? `.${fraction}` : ''}+00`;
        const want = (parse(text) as Date).toISOString();
        if (isoText(text) !== want) expect(isoText(text), text).toBe(want);
      }
    });
  }

  it('reads no Date where the text is exact: the driver parser is not called', () => {
    const calls: string[] = [];
    const isoText = timestampText((text) => {
      calls.push(text);
      return new Date(0);
    });
    expect(isoText('2026-12-02 16:25:36.123456+00')).toBe('2026-12-02T16:25:36.123Z');
    expect(isoText('2026-12-02 16:25:36+00')).toBe('2026-12-02T16:25:36.000Z');
    expect(calls).toEqual([]);
    expect(isoText('2026-12-02 17:25:36+01')).toBe('1970-01-01T00:00:00.000Z');
    expect(calls).toEqual(['2026-12-02 17:25:36+01']);
  });
});

describe('timestamptz text to the API ISO text, against what this database returns', () => {
  let handle: DatabaseHandle;
  beforeAll(async () => {
    handle = await openTestDatabase({ migrated: false });
  });
  afterAll(async () => {
    await handle.close();
  });

  const VALUES = [
    `now()`,
    `'2026-12-02 16:25:36.123456+00'`,
    `'2026-12-02 16:25:36.9999995+00'`,
    `'2026-12-02 16:25:36+00'`,
    `'2026-12-02 16:25:36.100+00'`,
    `'2024-02-29 00:00:00.000001+00'`,
    `'1000-01-01 00:00:00+00'`,
    `'0999-12-31 23:59:59.999+00'`,
    `'0050-01-01 00:00:00+00'`,
    `'0001-01-01 00:00:00+00 BC'`,
    `'9999-12-31 23:59:59.999999+00'`,
    `'12345-01-01 00:00:00+00'`,
    `'1883-11-18 12:00:00+00'`,
    `'infinity'`,
    `'-infinity'`,
  ];
  const ZONES = ['UTC', 'Etc/UTC', 'Asia/Kolkata', 'America/St_Johns', 'America/New_York', 'Europe/Amsterdam'];
  const STYLES = ['ISO, MDY', 'ISO, DMY', 'SQL, DMY', 'Postgres, MDY', 'German'];

  it('every value, time zone and date style: the text of created_at::text as the driver made the column before', async () => {
    const isoText = handle.kind === 'postgres' ? postgresTimestampText : pgliteTimestampText;
    let fast = 0;
    for (const zone of ZONES) {
      for (const style of STYLES) {
        const rows = await handle.db.transaction().execute(async (trx) => {
          await sql`select set_config('TimeZone', ${zone}, true), set_config('DateStyle', ${style}, true)`.execute(trx);
          const values = sql.raw(VALUES.map((v) => `(${v}::timestamptz)`).join(', '));
          const result = await sql<{
            value: unknown;
            text: string;
          }>`select v as value, v::text as text from (values ${values}) as t(v)`.execute(trx);
          return result.rows;
        });
        expect(rows).toHaveLength(VALUES.length);
        for (const row of rows) {
          const label = `${zone} / ${style}: ${row.text}`;
          expect(
            outcome(() => isoText(row.text)),
            label,
          ).toEqual(outcome(() => (row.value as Date).toISOString()));
          if (/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?\+00$/.test(row.text)) fast++;
        }
      }
    }
    // The UTC sessions' ISO texts took the path without a Date.
    expect(fast).toBeGreaterThan(0);
  });
});
