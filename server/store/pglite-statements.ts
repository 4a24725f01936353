// Prepared statements for PGlite. `pg.query(sql, params)` parses, describes, binds and executes
// in six protocol calls into the WebAssembly backend, and PostgreSQL plans the statement each
// time. Our queries come from Kysely, so the same texts repeat: each text is parsed once as a
// named statement (its parameter types remembered) and every later run is one call (Bind,
// Describe, Execute, Sync). PostgreSQL's plan cache then does what it does for any prepared
// statement (plan_cache_mode auto): five runs planned with their values, then a generic plan when
// it costs no more, so a repeated lookup is no longer planned on every run.
// A generic plan cannot use a partial index whose predicate the query states with a parameter
// (`status = $3` against `where status = 'pending'`): such a query costs more generic and is
// planned on every run, so our queries state those predicates as literals (the sign-in path is
// checked by test/unit/login/plan-cache.test.ts). In `on conflict (…) where status = $1` it is
// worse, the arbiter index is not found at all: such a statement is parsed as the unnamed
// statement on every run, and so planned with its values (still cheaper than pg.query's six calls).
// Values are serialised and fields parsed by PGlite's own serializers and type parsers, exactly as
// `pg.query` does; errors are the same `DatabaseError`s. The rows are put together here
// (`results` below) rather than by PGlite's parseResults, which builds each row through an array
// of [name, value] pairs and Object.fromEntries and looks each field's parser up again for every
// row, most of its cost spent on the pairs.
import { parse, protocol, types, type PGlite, type Results } from '@electric-sql/pglite';

interface Statement {
  name: string;
  types: number[];
}

/** Statements kept per database; past it the least recently used one is closed. */
const MAX_STATEMENTS = 2_000;

// "cached plan must not change result type" (a table's columns changed under a `select *`) and
// "prepared statement does not exist": the statement is parsed again, once, outside a transaction.
const STALE = new Set(['0A000', '26000']);

// An ON CONFLICT whose arbiter predicate holds a parameter (`on conflict ("k") where "status" = $3 do …`).
const ARBITER_WITH_PARAMETER = /on conflict\s*\([^)]*\)\s*where\s(?:(?!\bdo\b)[\s\S])*\$\d/i;

const { serialize } = protocol;

// Statement names are unique in the process, so two instances on one database never collide.
let named = 0;

function concat(parts: Uint8Array[]): Uint8Array {
  let length = 0;
  for (const part of parts) length += part.length;
  const out = new Uint8Array(length);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

type TypeParser = (value: string, typeId: number) => unknown;
type Message = { name: string; fields?: unknown[]; text?: string };
const COUNTED = new Set(['INSERT', 'UPDATE', 'DELETE', 'COPY', 'MERGE']);
const DEFAULT_PARSERS = types.parsers as Record<number, TypeParser>;

/**
 * The one result of a Bind/Describe/Execute/Sync run: what `parse.parseResults(messages,
 * parsers)[0]` answers (rows as plain objects, a later column of the same name winning, NULL as
 * null, each field through the parser of its type or PGlite's default one; fields, command,
 * affectedRows, rowCount), each column's parser looked up once.
 */
function results<R>(messages: readonly Message[], parsers: Record<number, TypeParser>): Results<R> {
  let fields: { name: string; dataTypeID: number }[] = [];
  let parsersOf: (TypeParser | undefined)[] = [];
  const rows: Record<string, unknown>[] = [];
  for (const message of messages) {
    if (message.name === 'rowDescription') {
      fields = (message.fields as { name: string; dataTypeID: number }[]).map(({ name, dataTypeID }) => ({ name, dataTypeID }));
      parsersOf = fields.map(({ dataTypeID }) => parsers[dataTypeID] ?? DEFAULT_PARSERS[dataTypeID]);
    } else if (message.name === 'dataRow') {
      const values = message.fields as (string | null)[];
      const row: Record<string, unknown> = {};
      for (let i = 0; i < values.length; i++) {
        const value = values[i]!;
        const parser = parsersOf[i];
        const parsed = value === null ? null : parser ? parser(value, fields[i]!.dataTypeID) : value;
        const name = fields[i]!.name;
        // An own property even for `__proto__`, as Object.fromEntries makes it.
        if (name === '__proto__') Object.defineProperty(row, name, { value: parsed, enumerable: true, writable: true, configurable: true });
        else row[name] = parsed;
      }
      rows.push(row);
    } else if (message.name === 'commandComplete') {
      const words = message.text!.split(' ');
      const command = words[0]!;
      const count = parseInt(words[words.length - 1]!, 10);
      const result: Results<R> = { rows: rows as R[], fields, command, affectedRows: COUNTED.has(command) ? count : 0 };
      if (!Number.isNaN(count)) result.rowCount = count;
      return result;
    }
  }
  // No command completed (a portal suspended): as parseResults, an empty result.
  return { affectedRows: 0, rows: [], fields: [] };
}

export class PGliteStatements {
  private readonly statements = new Map<string, Statement>();
  private closing: string[] = [];

  constructor(
    private readonly pg: PGlite,
    private readonly max = MAX_STATEMENTS,
  ) {}

  /** `pg.query(sql, params)` through a prepared statement. */
  query<R>(sql: string, params: readonly unknown[]): Promise<Results<R>> {
    return this.pg.runExclusive(async () => {
      let result: Results<R>;
      try {
        result = await this.run<R>(sql, params);
      } catch (error) {
        if (!STALE.has((error as { code?: string }).code ?? '') || this.pg.isInTransaction()) throw error;
        this.forget(sql);
        result = await this.run<R>(sql, params);
      }
      await this.pg.syncToFs();
      return result;
    });
  }

  get size(): number {
    return this.statements.size;
  }

  private async run<R>(sql: string, params: readonly unknown[]): Promise<Results<R>> {
    let statement = this.statements.get(sql);
    if (statement) {
      // Least recently used first: a hit moves to the end.
      this.statements.delete(sql);
      this.statements.set(sql, statement);
    } else if (ARBITER_WITH_PARAMETER.test(sql)) {
      statement = await this.prepare(sql, '');
    } else {
      if (this.statements.size >= this.max) this.forget(this.statements.keys().next().value!);
      statement = await this.prepare(sql, `k${named++}`);
      this.statements.set(sql, statement);
    }
    const values = params.map((value, i) => {
      if (value === null || value === undefined) return null;
      const serializer = this.pg.serializers[statement.types[i]!];
      return serializer ? serializer(value) : String(value);
    });
    const messages = await this.pg.execProtocolStream(
      concat([serialize.bind({ statement: statement.name, values }), serialize.describe({ type: 'P' }), serialize.execute({}), serialize.sync()]),
      { syncToFs: false },
    );
    return results<R>(messages, this.pg.parsers);
  }

  /** Parses `sql` as the statement `name` ('' for the unnamed one) and learns its parameter types. */
  private async prepare(sql: string, name: string): Promise<Statement> {
    const parts = this.closing.map((closed) => serialize.close({ type: 'S', name: closed }));
    this.closing = [];
    parts.push(serialize.parse({ name, text: sql }), serialize.describe({ type: 'S', name }), serialize.sync());
    const messages = await this.pg.execProtocolStream(concat(parts), { syncToFs: false });
    return { name, types: parse.parseDescribeStatementResults(messages) };
  }

  /** Drops a statement; the backend's copy is closed with the next Parse. */
  private forget(sql: string): void {
    const statement = this.statements.get(sql);
    if (!statement) return;
    this.statements.delete(sql);
    this.closing.push(statement.name);
  }
}
