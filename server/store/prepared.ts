// Queries of a fixed shape, built and compiled once. Kysely builds a query's operation tree and
// compiles it to SQL on every run. In the whole server, where hundreds of query shapes pass
// through the same builder and compiler functions, V8 cannot specialise them, and a simple
// lookup costs more to build than to send to PGlite's prepared statement
// (./pglite-statements.ts). A query on a hot path whose shape never changes (the owner's account,
// a contact's number check and insert) is built here once with slots for its values; each run
// takes the compiled SQL and puts the run's values in the slots' parameters.
//
// Only a value that Kysely sends as a bind parameter can be a slot (a `where` or `values` value,
// not a column name, `sql.lit`, `sql.raw` or a JSON path), and a value that changes the query's
// shape (a filter present or not) cannot: such a query is built per run. The first compile checks
// that every slot became a parameter.
import type { Compilable, CompiledQuery, Kysely } from 'kysely';
import type { Database } from './schema.js';

/** A placeholder for one named value; Kysely keeps it as the value of a parameter. */
class Slot {
  constructor(readonly name: string) {}
}

type Values = Record<string, unknown>;

export interface PreparedQuery<V extends Values, R> {
  /** Its rows on `db` (the store's database or a transaction). */
  execute(db: Kysely<Database>, values: V): Promise<R[]>;
  /** Its first row on `db`, or undefined. */
  executeTakeFirst(db: Kysely<Database>, values: V): Promise<R | undefined>;
}

/**
 * `build(db, slots)` returns the query with `slots.<name>` where a run's value goes; the slots'
 * names are those of `values` at the first run. Every store compiles the same SQL (PGlite's dialect and
 * pg's share ./inline-limits.ts's compiler), so one compiled query serves every database.
 */
export function prepared<V extends Values, R>(build: (db: Kysely<Database>, slots: V) => Compilable<R>): PreparedQuery<V, R> {
  let compiled: CompiledQuery<R> | undefined;
  // For each parameter: the name of the slot it holds, or undefined for a constant of the query.
  let names: (string | undefined)[] = [];
  const compile = (db: Kysely<Database>, values: V): CompiledQuery<R> => {
    if (!compiled) {
      const slots = Object.fromEntries(Object.keys(values).map((name) => [name, new Slot(name)])) as V;
      const query = build(db, slots).compile();
      names = query.parameters.map((p) => (p instanceof Slot ? p.name : undefined));
      const missing = Object.keys(values).filter((name) => !names.includes(name));
      if (missing.length) throw new Error(`prepared query: ${missing.join(', ')} did not become a bind parameter of ${query.sql}`);
      compiled = query;
    }
    const parameters = names.map((name, i) => (name === undefined ? compiled!.parameters[i] : values[name]));
    return { ...compiled, parameters };
  };
  return {
    async execute(db, values) {
      return (await db.executeQuery(compile(db, values))).rows;
    },
    async executeTakeFirst(db, values) {
      return (await db.executeQuery(compile(db, values))).rows[0];
    },
  };
}
