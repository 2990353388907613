import { createQueryId, type CompiledQuery, type Compilable, type QueryResult } from 'kysely';
import type { Queryable } from './client.js';

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
