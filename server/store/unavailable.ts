// PostgreSQL out of reach (restarting, refusing connections, the network cut, the disk full)
// is not a bug in a request: it answers 503 `unavailable` with Retry-After, never 500, and the
// next request after recovery works (the pool opens new connections by itself).
import { PostgresDialect, type CompiledQuery, type DatabaseConnection, type Driver, type QueryCompiler, type QueryResult } from 'kysely';
import { InlineLimitsCompiler } from './inline-limits.js';
import { HttpProblem } from '../lib/problems.js';

export const RETRY_AFTER_SECONDS = 5;

// SQLSTATE classes and codes that mean "the database cannot serve now", not "this query is wrong":
// 08 connection exception; 57P01-57P03 shutdown and startup; 53 insufficient resources (disk
// full, out of memory, too many connections).
const UNAVAILABLE_STATES = /^(08|53|57P0[123])/;
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
// node-postgres reports a closed or stalled socket with a message and no code.
const NETWORK_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection refused|not queryable/i;

export function isUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || (code.length === 5 && UNAVAILABLE_STATES.test(code)))) return true;
  return NETWORK_MESSAGES.test(error.message);
}

/** The database out of reach is to blame: the driver's error itself, or the 503 problem it became (toUnavailable). */
export function causedByUnavailable(error: unknown): boolean {
  return isUnavailable(error) || (error instanceof HttpProblem && error.status === 503 && isUnavailable(error.cause));
}

function toUnavailable(error: unknown): never {
  if (!isUnavailable(error)) throw error;
  const problem = new HttpProblem(
    503,
    'unavailable',
    'The database is not reachable right now; try again shortly.',
    {},
    { 'retry-after': String(RETRY_AFTER_SECONDS) },
  );
  problem.cause = error;
  throw problem;
}

const WRAPPED = Symbol('unavailable-aware');

function wrapConnection(connection: DatabaseConnection): DatabaseConnection {
  const marked = connection as DatabaseConnection & { [WRAPPED]?: true };
  if (marked[WRAPPED]) return connection;
  // Patched in place: the driver releases the very object it handed out.
  const execute = connection.executeQuery.bind(connection);
  connection.executeQuery = <R>(query: CompiledQuery): Promise<QueryResult<R>> => execute<R>(query).catch(toUnavailable);
  marked[WRAPPED] = true;
  return connection;
}

export class UnavailableAwareDialect extends PostgresDialect {
  override createQueryCompiler(): QueryCompiler {
    return new InlineLimitsCompiler();
  }

  override createDriver(): Driver {
    const driver = super.createDriver();
    const acquire = driver.acquireConnection.bind(driver);
    driver.acquireConnection = () => acquire().then(wrapConnection, toUnavailable);
    return driver;
  }
}
