import { sql, type RawBuilder } from 'kysely';

/**
 * A batch's rows as a VALUES list of typed parameters, for a set-wise write (`UPDATE … FROM`,
 * `DELETE … USING`, `INSERT … SELECT`): `(values ($1::uuid, $2::bigint), …) as d(id, amount)`.
 *
 * Not `unnest(array parameters)`: PostgreSQL cannot see how many elements a parameter holds, so
 * a prepared statement's generic plan counts on ten rows from each unnest, costs more than the
 * custom plan made for the actual one or two, and is never chosen. Every call then planned the
 * batch's whole write statement anew, 0.6 ms of a lone transfer's 1.5 ms in PostgreSQL at a
 * steady 100/s (docs/money-path.md). A VALUES list states its rows, so both plans cost the same
 * and, from the sixth call of a statement text, the generic one is reused. `columns` maps each
 * column's name to its SQL type, in row order.
 */
export function valuesOf(alias: string, columns: Record<string, string>, rows: readonly (readonly unknown[])[]): RawBuilder<unknown> {
  const types = Object.values(columns);
  const list = rows.map((row) => {
    if (row.length !== types.length) throw new Error(`valuesOf(${alias}): a row of ${row.length} values for ${types.length} columns`);
    return sql`(${sql.join(row.map((value, i) => sql`${value}::${sql.raw(types[i]!)}`))})`;
  });
  return sql`(values ${sql.join(list)}) as ${sql.raw(alias)}(${sql.raw(Object.keys(columns).join(', '))})`;
}
