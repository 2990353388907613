import pg from 'pg';

/**
 * A `timestamptz` as the API writes it (`Date#toISOString()`), from PostgreSQL's text of it
 * (`created_at::text`), without a Date in between where that text makes it exact.
 *
 * In the session time zone UTC with the ISO date style (what both drivers of this project run
 * with), a timestamp of the years 1000–9999 comes as `YYYY-MM-DD HH:MM:SS[.ffffff]+00`: its
 * ISO text is the same digits with the fraction cut to milliseconds, which is what parsing it to
 * a Date and writing that Date out gives (both drivers' parsers truncate the microseconds). Any
 * other text (another time zone or date style, another era, `infinity`) goes through the
 * driver's own parser and `toISOString()`, as a timestamp column's value always did, and so
 * answers, or fails, exactly as before.
 */
export type TimestampText = (text: string) => string;

const UTC_ISO_STYLE = /^[1-9]\d{3}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,6})?\+00$/;

export function timestampText(parse: (text: string) => unknown): TimestampText {
  return (text) => {
    if (!UTC_ISO_STYLE.test(text)) return (parse(text) as Date).toISOString();
    // 19 characters of date and time, then an optional `.` and 1–6 digits, then `+00`.
    const digits = text.length - 23;
    const ms = digits <= 0 ? '000' : digits >= 3 ? text.slice(20, 23) : text.slice(20, 20 + digits) + (digits === 1 ? '00' : '0');
    return `${text.slice(0, 10)}T${text.slice(11, 19)}.${ms}Z`;
  };
}

const TIMESTAMPTZ = 1184;

/** pg's parser of a timestamptz (postgres-date): the one openPostgres's pool uses (db/client.ts). */
export const postgresTimestampText = timestampText(pg.types.getTypeParser(TIMESTAMPTZ, 'text'));

/** PGlite's parser of a timestamptz (its `types.parsers[1184]`, the one openPGlite keeps). */
export const pgliteTimestampText = timestampText((v) => (v === 'infinity' ? Infinity : v === '-infinity' ? -Infinity : new Date(v)));
