import { CompiledQuery, createQueryId, sql, type OperationNodeSource, type RootOperationNode } from 'kysely';
import type { Queryable } from './client.js';

/**
 * One INSERT, UPDATE or DELETE without a WITH of its own: a Kysely query builder, a `sql`
 * template, or such a statement already compiled (db/compiled.ts compiledPerShape).
 */
export type WritePart = (OperationNodeSource & { execute(db: Queryable): Promise<unknown> }) | CompiledQuery<unknown>;

function isCompiled(part: WritePart): part is CompiledQuery<unknown> {
  return 'sql' in part && 'parameters' in part;
}

/** A part compiled on its own, as Kysely would compile it inside the WITH (an INSERT, UPDATE or DELETE there is no subquery). */
function compiledPart(db: Queryable, part: WritePart): CompiledQuery<unknown> {
  if (isCompiled(part)) return part;
  const executor = db.getExecutor();
  const queryId = createQueryId();
  return executor.compileQuery(executor.transformQuery(part.toOperationNode() as RootOperationNode, queryId), queryId);
}

/**
 * A placeholder ($n, group 1), or a quoted string or identifier (left as it is: a `$1` inside
 * one is text, not a parameter). A `$` inside a word (an identifier such as a$1) is no placeholder.
 */
const PLACEHOLDER = /'(?:[^']|'')*'|"(?:[^"]|"")*"|(?<![\w$])\$(\d+)/g;

/**
 * A part's text with its placeholders numbered on from `offset` ($1 → $offset+1), as they are in
 * the WITH statement; undefined unless they first appear as $1…$n in order, one per parameter, as
 * Kysely numbers them (insertPerShape repeats a shared column's placeholder in each row; a `$` of
 * any other kind: the statement is compiled whole, as before).
 */
function renumbered(part: CompiledQuery<unknown>, offset: number): string | undefined {
  let seen = 0;
  let inOrder = true;
  const text = part.sql.replace(PLACEHOLDER, (match, n: string | undefined) => {
    if (n === undefined) return match;
    const k = Number(n);
    if (k === seen + 1) seen = k;
    else if (k > seen || k < 1) inOrder = false;
    return `$${k + offset}`;
  });
  return inOrder && seen === part.parameters.length ? text : undefined;
}

/** `with w0 as (…), w1 as (…) select 1` of these parts' texts, or undefined (see renumbered). */
function withText(parts: CompiledQuery<unknown>[]): { text: string; count: number } | undefined {
  const texts: string[] = [];
  let offset = 0;
  for (const [i, part] of parts.entries()) {
    const text = renumbered(part, offset);
    if (text === undefined) return undefined;
    texts.push(`w${i} as (${text})`);
    offset += part.parameters.length;
  }
  return { text: `with ${texts.join(', ')} select 1`, count: offset };
}

/**
 * The WITH texts made so far, by their parts' texts in order (a trie: the parts compiled once per
 * shape are the same string each time, so a batch finds its text without building or hashing it
 * again, and PostgreSQL's prepared statement is found by the same string). null: not joinable.
 */
interface Joined {
  next: Map<string, Joined>;
  /** The text and its parameter count. */
  statement?: { text: string; count: number } | null;
}
const joinedTexts: Joined = { next: new Map() };
let joinedCount = 0;
const JOINED_MAX = 5000;

function cachedWithText(parts: CompiledQuery<unknown>[]): { text: string; count: number } | undefined {
  let node = joinedTexts;
  for (const part of parts) {
    let child = node.next.get(part.sql);
    if (!child) {
      if (++joinedCount > JOINED_MAX) {
        joinedTexts.next.clear(); // parts compiled anew each time (their values in the text) must not fill memory
        joinedCount = 0;
      }
      child = { next: new Map() };
      node.next.set(part.sql, child);
    }
    node = child;
  }
  if (node.statement === undefined) node.statement = withText(parts) ?? null;
  return node.statement ?? undefined;
}

/**
 * The WITH statement of the parts' compiled texts and parameters: the text and parameters Kysely
 * compiles from the same parts; undefined if a part's placeholders are not Kysely's own.
 */
function joined(parts: CompiledQuery<unknown>[]): CompiledQuery<unknown> | undefined {
  const statement = cachedWithText(parts);
  if (statement === undefined) return undefined;
  const parameters: unknown[] = [];
  for (const part of parts) for (const p of part.parameters) parameters.push(p);
  // Each text has its number of parameters: a part described with others is a fault, not a statement to send.
  if (parameters.length !== statement.count)
    throw new Error(`WriteSet: ${parameters.length} parameters for ${statement.count} placeholders`);
  return CompiledQuery.raw(statement.text, parameters);
}

/** A part in a Kysely statement: a compiled one as its text around its own parameters (its query tree holds its first values). */
function nodeOf(part: WritePart): OperationNodeSource {
  if (!isCompiled(part)) return part;
  if (renumbered(part, 0) === undefined) throw new Error(`WriteSet: a compiled part with a $ of its own: ${part.sql}`);
  const fragments: string[] = [];
  const values: unknown[] = [];
  let from = 0;
  for (const m of part.sql.matchAll(PLACEHOLDER)) {
    if (m[1] === undefined) continue;
    const k = Number(m[1]);
    fragments.push(part.sql.slice(from, m.index));
    values.push(part.parameters[k - 1]); // a repeated placeholder: its value again, as a parameter of its own
    from = m.index + m[0].length;
  }
  fragments.push(part.sql.slice(from));
  return sql(fragments as unknown as TemplateStringsArray, ...values);
}

/**
 * The writes of a unit of work that nothing reads back before it commits, sent as ONE statement
 * at the end: `with w0 as (insert …), w1 as (update …), … select 1` (docs/money-path.md). A batch
 * of transfers pays one round trip for its balances, ledger entries, account transactions,
 * transfers, events, counters and idempotency records instead of one each.
 *
 * The rule that makes it safe: the parts run on one snapshot in no defined order, so no part may
 * depend on another's effect or touch the same row as another. Foreign keys between parts are
 * fine, and so are the after-row reference checks of migration 1240 (both run at the end of the
 * statement); CHECK constraints still hold per row, and
 * any violation fails the whole statement, so the unit rolls back whole as before.
 */
export class WriteSet {
  private readonly parts: WritePart[] = [];

  constructor(readonly db: Queryable) {}

  add(part: WritePart): void {
    this.parts.push(part);
  }

  /** Sends every part added so far as one statement (nothing when empty). */
  async flush(): Promise<void> {
    const parts = this.parts.splice(0);
    if (parts.length === 0) return;
    if (parts.length === 1) {
      const part = parts[0]!;
      await (isCompiled(part) ? this.db.executeQuery(part) : part.execute(this.db));
      return;
    }
    // The parts compiled one by one and joined: those compiled once per shape cost no Kysely work.
    const statement = joined(parts.map((part) => compiledPart(this.db, part)));
    if (statement) await this.db.executeQuery(statement);
    else await sql`with ${sql.join(parts.map((part, i) => sql`${sql.raw(`w${i}`)} as (${nodeOf(part)})`))} select 1`.execute(this.db);
  }
}

/** Where a write goes: a connection or transaction (run now), or a WriteSet (run at its flush). */
export type Writer = Queryable | WriteSet;

/** Runs the write built on `to`'s database now, or defers it into the write set. */
export async function write(to: Writer, build: (db: Queryable) => WritePart): Promise<void> {
  if (to instanceof WriteSet) return to.add(build(to.db));
  const part = build(to);
  await (isCompiled(part) ? to.executeQuery(part) : part.execute(to));
}

/**
 * Runs `work` with a write set: `to` itself when it is one (the caller sends it later), else a set
 * of its own that is sent, as one statement, when `work` is done.
 */
export async function inOneStatement<T>(to: Writer, work: (set: WriteSet) => Promise<T>): Promise<T> {
  const set = to instanceof WriteSet ? to : new WriteSet(to);
  const result = await work(set);
  if (set !== to) await set.flush();
  return result;
}

/** Several writes as one statement: now (on a connection or transaction) or at the write set's flush. */
export async function writeTogether(to: Writer, build: (db: Queryable) => WritePart[]): Promise<void> {
  await inOneStatement(to, async (set) => build(set.db).forEach((part) => set.add(part)));
}
