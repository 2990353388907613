import { sql, type RawBuilder } from 'kysely';

/** Up to this many rows go as a VALUES list; more as unnest(arrays) (see valuesOf). */
const VALUES_ROWS_MAX = 8;

/**
 * A batch's rows as a relation for a set-wise write (`UPDATE … FROM`, `DELETE … USING`,
 * `INSERT … SELECT`): `… as d(id, amount)`. `columns` maps each column's name to its SQL type,
 * in row order.
 *
 * A few rows (a lone movement's, a small batch's) go as a VALUES list of typed parameters. Joined
 * to `unnest(array parameters)` instead, a prepared statement's generic plan counts on ten rows
 * from each array it cannot see into, costs more than the custom plan made for the actual one or
 * two, and is never chosen: every lone transfer's write statement would be planned anew, a large
 * part of its time in PostgreSQL (docs/benchmarks.md#the-figures-behind-the-defaults). A VALUES list states its rows, so
 * both plans cost the same and, from the sixth call of a statement text, the generic one is
 * reused. More rows go as unnest(arrays): one parameter per column whatever the count, so the
 * statement text does not change with the batch's size, and a large batch's planning is shared
 * by its many movements anyway (a VALUES list there is slower under the spread load).
 */
export function valuesOf(alias: string, columns: Record<string, string>, rows: readonly (readonly unknown[])[]): RawBuilder<unknown> {
  const names = Object.keys(columns);
  const types = Object.values(columns);
  for (const row of rows) {
    if (row.length !== types.length) throw new Error(`valuesOf(${alias}): a row of ${row.length} values for ${types.length} columns`);
  }
  const relation = sql.raw(`${alias}(${names.join(', ')})`);
  if (rows.length > VALUES_ROWS_MAX) {
    const arrays = types.map((type, i) => sql`${arrayParameter(rows.map((row) => row[i]))}::${sql.raw(type)}[]`);
    return sql`unnest(${sql.join(arrays)}) as ${relation}`;
  }
  const list = rows.map((row) => sql`(${sql.join(row.map((value, i) => sql`${value}::${sql.raw(types[i]!)}`))})`);
  return sql`(values ${sql.join(list)}) as ${relation}`;
}

/** valuesOf's text for these rows: one per row count up to VALUES_ROWS_MAX, then one for any count (compiledPerShape's shape). */
export function valuesShape(rows: readonly (readonly unknown[])[]): string {
  return rows.length > VALUES_ROWS_MAX ? 'unnest' : String(rows.length);
}

/** The parameters valuesOf puts in its text, in their order: each row's values, or an array parameter per column. */
export function valuesParameters(rows: readonly (readonly unknown[])[]): unknown[] {
  if (rows.length <= VALUES_ROWS_MAX) return rows.flat();
  return rows[0]!.map((_, i) => arrayParameter(rows.map((row) => row[i])));
}

/** A JSON escape that PostgreSQL's array text does not have (backslash n, backslash u0001): after an even run of backslashes. */
const JSON_ONLY_ESCAPE = /(?<!\\)(?:\\\\)*\\[bfnrtu]/;

/**
 * A column of values as one array parameter, written here as PostgreSQL's array text where that
 * is plain, else the array itself for pg to write. pg writes an array element by element, each
 * string through two regular-expression passes (a batch's ids, businesses, references: a visible
 * share of its write statement's cost).
 * - Strings and nulls: JSON.stringify's `["a\\"b",null]` is the array text `{"a\\"b",null}`
 *   (quotes and backslashes escaped the same way, an unquoted null is NULL), unless a string held a
 *   character JSON escapes otherwise (a control character, a lone surrogate).
 * - Integers (number or bigint) and nulls: `{1,-2,NULL}`.
 * Anything else (dates, booleans, objects, a mix) goes as the array.
 */
export function arrayParameter(values: readonly unknown[]): unknown {
  let strings = true;
  let integers = true;
  for (const v of values) {
    if (v === null) continue;
    if (typeof v !== 'string') strings = false;
    if (typeof v !== 'bigint' && !Number.isSafeInteger(v)) integers = false;
    if (!strings && !integers) return values;
  }
  if (integers) return `{${values.map((v) => (v === null ? 'NULL' : String(v))).join(',')}}`;
  const json = JSON.stringify(values);
  return JSON_ONLY_ESCAPE.test(json) ? values : `{${json.slice(1, -1)}}`;
}

/**
 * `text` as a string constant of the statement: E'…', whose backslashes mean the same whatever
 * the server's standard_conforming_strings says. A LIKE pattern passed this way is planned with
 * its value: as a parameter, a prepared statement's generic plan (made without it, from the sixth
 * call) cannot tell a rare pattern from a common one. (Callers reject NUL: no string can hold it.)
 */
export function stringConstant(text: string): RawBuilder<string> {
  return sql.raw<string>(`E'${text.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`);
}

/** `text` matched literally inside a LIKE pattern: its `\`, `%` and `_` escaped. */
export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}
