import { createQueryId, RawNode, type CompiledQuery, type Compilable, type Insertable, type QueryResult, type RawBuilder } from 'kysely';
import type { Queryable } from './client.js';
import type { Database } from './types.js';

/**
 * A statement whose text never changes, built and compiled by Kysely once: each call then only
 * fills in its parameters, with no query tree to build, walk and freeze (a read's or a flush's
 * share of the server's CPU). Every dialect of this project compiles PostgreSQL's text, so one
 * text serves them all. Plugins still see each call's statement; one that changes it gets the
 * statement built and compiled anew.
 *
 * `build` makes the statement from its parameters. The first call builds it with that call's
 * values and checks that they are the compiled statement's parameters, each as given and in the
 * order given, so a statement that holds a value in its text, or reorders them, fails at once
 * instead of answering with the wrong values.
 */
export function compiledOnce<P extends unknown[], R>(build: (db: Queryable, ...params: P) => Compilable<R>) {
  let first: CompiledQuery<R> | undefined;
  const compile = (db: Queryable, params: P): CompiledQuery<R> => {
    const compiled = build(db, ...params).compile();
    const same = compiled.parameters.length === params.length && compiled.parameters.every((p, i) => p === params[i]);
    if (!same) throw new Error(`compiledOnce: the statement's parameters are not the ones given, in order: ${compiled.sql}`);
    return compiled;
  };
  return {
    async execute(db: Queryable, ...params: P): Promise<QueryResult<R>> {
      if (!first) {
        first = compile(db, params);
        return db.executeQuery(first);
      }
      const queryId = createQueryId();
      const node = db.getExecutor().transformQuery(first.query, queryId);
      const compiled = node === first.query ? { ...first, parameters: params, queryId } : compile(db, params);
      return db.executeQuery(compiled);
    },
  };
}

/** A statement's shape (its cache key: the same shape always compiles to the same text) and its parameters, in order. */
export interface Shaped {
  shape: string;
  parameters: readonly unknown[];
}

/** Whether Kysely's parameters are the ones given: each the same value, arrays element by element (valuesOf builds its own). */
function sameParameters(compiled: readonly unknown[], given: readonly unknown[]): boolean {
  return (
    compiled.length === given.length &&
    compiled.every((p, i) => {
      const g = given[i];
      if (Array.isArray(p) && Array.isArray(g)) return p.length === g.length && p.every((x, k) => x === g[k]);
      return p === g;
    })
  );
}

/**
 * compiledOnce for a statement whose text depends on its input's shape (a batch's multi-row
 * insert: its row count and columns): built and compiled by Kysely once per shape, then only
 * its parameters filled in. `describe` gives the input's shape and the parameters Kysely puts in
 * the statement, in order (undefined: an input it cannot tell, built and compiled as usual).
 * Each shape's first build is checked as in compiledOnce: the compiled parameters must be the
 * ones described, in order, so a description that disagrees with the statement fails at once.
 * `build` returns a query builder or an `sql` template (a raw statement, compiled on `db`).
 */
export function compiledPerShape<A extends unknown[], R>(
  build: (db: Queryable, ...args: A) => Compilable<R> | RawBuilder<R>,
  describe: (...args: A) => Shaped | undefined,
): (db: Queryable, ...args: A) => CompiledQuery<R> {
  const shapes = new Map<string, CompiledQuery<R>>();
  // A query builder compiles on its own database; an sql template is handed it.
  const compile = (db: Queryable, args: A) => build(db, ...args).compile(db);
  return (db, ...args) => {
    const described = describe(...args);
    if (!described) return compile(db, args);
    const { shape, parameters } = described;
    // A plugin may change each statement: with one, each is built as usual.
    if (db.getExecutor().plugins.length > 0) return compile(db, args);
    const first = shapes.get(shape);
    if (first) return { ...first, parameters, queryId: createQueryId() };
    const compiled = compile(db, args);
    if (!sameParameters(compiled.parameters, parameters))
      throw new Error(`compiledPerShape: the statement's parameters are not the ones described, in order: ${compiled.sql}`);
    if (shapes.size >= MAX_SHAPES) shapes.clear();
    // Kept as its text only: the query tree holds this call's values (a large insert's thousands of nodes).
    shapes.set(shape, { ...compiled, query: RawNode.createWithSql(compiled.sql), parameters: [] });
    return compiled;
  };
}

/** Shapes kept per statement (a batch's row counts stay far below; clearing only costs a compile). */
const MAX_SHAPES = 500;

/** Larger inserts (a bulk's) are compiled as usual: their texts, one per row count, are not worth keeping. */
const INSERT_ROWS_MAX = 128;

/** Whether a value becomes SQL of its own in Kysely (an expression such as sql`now()`, or its factory), not a parameter. */
function isExpression(value: unknown): boolean {
  return typeof value === 'function' || (typeof value === 'object' && value !== null && 'toOperationNode' in value);
}

/**
 * The shape and parameters of Kysely's `insertInto(table).values(rows)`: its columns and row
 * count, and each row's values in column order. Undefined when Kysely would write the rows
 * differently than that (rows with different columns or in a different order, an undefined value,
 * which Kysely leaves to the column's default, or an expression): such rows are compiled as usual.
 */
export function insertShape(rows: readonly Record<string, unknown>[]): Shaped | undefined {
  if (rows.length === 0 || rows.length > INSERT_ROWS_MAX) return undefined;
  const columns = Object.keys(rows[0]!);
  const parameters: unknown[] = [];
  for (const row of rows) {
    let k = 0;
    for (const column in row) {
      const value = row[column];
      if (column !== columns[k++] || value === undefined || isExpression(value)) return undefined;
      parameters.push(value);
    }
    if (k !== columns.length) return undefined;
  }
  return { shape: `${columns.join(',')}|${rows.length}`, parameters };
}

/**
 * insertShape for insertPerShape: the shape also says which columns hold the same value in every
 * row (a batch's business, environment, currency, status, time, empty description, nulls; none
 * for one row), and the parameters are the first row's values, then each later row's values of
 * the other columns. Undefined where insertShape is.
 */
function sharedInsertShape(rows: readonly Record<string, unknown>[]): (Shaped & { shared: boolean[] }) | undefined {
  if (rows.length === 0 || rows.length > INSERT_ROWS_MAX) return undefined;
  const first = rows[0]!;
  const columns = Object.keys(first);
  // The same primitive or the same object in every row; not Dates of the same instant: rows that
  // each take their own `new Date()` share a millisecond or not by chance, and the shape (and so
  // the statement's text) would change from batch to batch with it.
  const shared = columns.map((column) => rows.length > 1 && rows.every((row) => row[column] === first[column]));
  const parameters: unknown[] = [];
  for (const [r, row] of rows.entries()) {
    let k = 0;
    for (const column in row) {
      const value = row[column];
      if (column !== columns[k] || value === undefined || isExpression(value)) return undefined;
      if (r === 0 || !shared[k]) parameters.push(value);
      k++;
    }
    if (k !== columns.length) return undefined;
  }
  const mask = shared.map((s) => (s ? 1 : 0)).join('');
  return { shape: `${columns.join(',')}|${rows.length}|${mask}`, parameters, shared };
}

/**
 * Each row's placeholder numbers in the statement: the first row's columns numbered in order, then
 * each later row's unshared columns numbered on, a shared column reusing the first row's number.
 * So placeholders first appear in ascending order (db/write-set.ts relies on it), one per
 * parameter of sharedInsertShape.
 */
function placeholderNumbers(rows: number, shared: boolean[]): number[] {
  const numbers: number[] = [];
  let next = 1;
  for (let r = 0; r < rows; r++) for (let c = 0; c < shared.length; c++) numbers.push(r > 0 && shared[c] ? numbers[c]! : next++);
  return numbers;
}

/**
 * `insertInto(table).values(rows)`, compiled by Kysely once per shape (insertShape): a batch's
 * multi-row insert, whose building and compiling would otherwise grow with its rows. A column
 * whose value is the same in every row is sent once, its placeholder repeated in each row
 * (`values ($1, $2, $3), ($4, $2, $5)`): the driver converts and sends it once, not once a row, and
 * PostgreSQL parses it once. A repeated placeholder stands in one column, so it has that
 * column's type wherever it appears. The rows stored are the ones Kysely's statement stores.
 */
export function insertPerShape<T extends keyof Database & string>(table: T) {
  const build = (db: Queryable, rows: Insertable<Database[T]>[]) => db.insertInto(table).values(rows as never);
  const texts = new Map<string, string>();
  return (db: Queryable, rows: Insertable<Database[T]>[]): CompiledQuery<unknown> => {
    const described = sharedInsertShape(rows);
    // A plugin may change each statement: with one, each is built as usual.
    if (!described || db.getExecutor().plugins.length > 0) return build(db, rows).compile();
    let text = texts.get(described.shape);
    if (text === undefined) {
      const compiled = build(db, rows).compile();
      if (!sameParameters(compiled.parameters, insertShape(rows)!.parameters))
        throw new Error(`insertPerShape: the statement's parameters are not the rows' values, in order: ${compiled.sql}`);
      const numbers = placeholderNumbers(rows.length, described.shared);
      let k = 0;
      text = compiled.sql.replace(/\$(\d+)/g, (_, n: string) => {
        if (Number(n) !== k + 1) throw new Error(`insertPerShape: placeholders out of order: ${compiled.sql}`);
        return `$${numbers[k++]!}`;
      });
      if (k !== numbers.length) throw new Error(`insertPerShape: ${k} placeholders for ${numbers.length} values: ${compiled.sql}`);
      if (texts.size >= MAX_SHAPES) texts.clear();
      texts.set(described.shape, text);
    }
    return { query: RawNode.createWithSql(text), sql: text, parameters: described.parameters, queryId: createQueryId() };
  };
}
