// Prepared statements for PGlite. `pg.query(sql, params)` parses, describes, binds and executes
// in six protocol calls into the WebAssembly backend, and PostgreSQL plans the statement each
// time. Our queries come from Kysely, so the same texts repeat: each text is parsed once as a
// named statement (its parameter types remembered) and every later run is one call (Bind,
// Describe, Execute, Sync). Each run is still planned with its values (plan_cache_mode
// force_custom_plan), as an unnamed statement is: a generic plan would not, for instance, match
// `on conflict (…) where status = $1` to a partial unique index. Measured on a primary-key
// lookup: 0.31 ms per query → 0.19 ms.
// Values are serialised and rows parsed by PGlite's own serializers, parsers and result reader,
// exactly as `pg.query` does; errors are the same `DatabaseError`s.
import { parse, protocol, type PGlite, type Results } from '@electric-sql/pglite';

interface Statement {
  name: string;
  types: number[];
}

/** Statements kept per database; past it the least recently used one is closed. */
const MAX_STATEMENTS = 2_000;

// "cached plan must not change result type" (a table's columns changed under a `select *`) and
// "prepared statement does not exist": the statement is parsed again, once, outside a transaction.
const STALE = new Set(['0A000', '26000']);

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

export class PGliteStatements {
  private readonly statements = new Map<string, Statement>();
  private closing: string[] = [];
  private customPlans = false;

  constructor(
    private readonly pg: PGlite,
    private readonly max = MAX_STATEMENTS,
  ) {}

  /** `pg.query(sql, params)` through a prepared statement. */
  query<R>(sql: string, params: readonly unknown[]): Promise<Results<R>> {
    return this.pg.runExclusive(async () => {
      if (!this.customPlans) {
        await this.pg.execProtocolStream(serialize.query('set plan_cache_mode = force_custom_plan'), { syncToFs: false });
        this.customPlans = true;
      }
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
    } else statement = await this.prepare(sql);
    const values = params.map((value, i) => {
      if (value === null || value === undefined) return null;
      const serializer = this.pg.serializers[statement.types[i]!];
      return serializer ? serializer(value) : String(value);
    });
    const messages = await this.pg.execProtocolStream(
      concat([serialize.bind({ statement: statement.name, values }), serialize.describe({ type: 'P' }), serialize.execute({}), serialize.sync()]),
      { syncToFs: false },
    );
    return parse.parseResults(messages, this.pg.parsers)[0] as Results<R>;
  }

  private async prepare(sql: string): Promise<Statement> {
    if (this.statements.size >= this.max) this.forget(this.statements.keys().next().value!);
    const parts = this.closing.map((name) => serialize.close({ type: 'S', name }));
    this.closing = [];
    const name = `k${named++}`;
    parts.push(serialize.parse({ name, text: sql }), serialize.describe({ type: 'S', name }), serialize.sync());
    const messages = await this.pg.execProtocolStream(concat(parts), { syncToFs: false });
    const statement = { name, types: parse.parseDescribeStatementResults(messages) };
    this.statements.set(sql, statement);
    return statement;
  }

  /** Drops a statement; the backend's copy is closed with the next Parse. */
  private forget(sql: string): void {
    const statement = this.statements.get(sql);
    if (!statement) return;
    this.statements.delete(sql);
    this.closing.push(statement.name);
  }
}
