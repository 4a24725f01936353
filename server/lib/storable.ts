// Text PostgreSQL cannot store as sent: NUL (text columns refuse it) and lone UTF-16 surrogates
// (they would be written as U+FFFD, silently changing the value). Requests carrying either are
// refused with 400 naming each field (bad-inputs H8); everything else (RTL marks, zero-width,
// combining marks, emoji) is stored as is. Signed webhooks from outside are checked by their own
// handlers once the signature holds: the provider's payload is not ours to refuse, so it is cleaned
// instead (`cleanUnstorable`); the hosted Login receiver refuses.
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { HttpProblem } from './problems.js';

const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const UNSTORABLE_ALL = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * JSON objects and the parsers' bare objects (the query parser's inherit from a null-prototype
 * object); not Buffers (uploaded files) or streams.
 */
function isPlain(value: unknown): value is Record<string, unknown> {
  if (!value || typeof value !== 'object') return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null || Object.getPrototypeOf(proto) === null;
}

/** A path kept as links to its parent, so that deep bodies cost memory linear in their size. */
interface Path {
  up: Path | null;
  key: string;
}

function pointerOf(path: Path): string {
  const keys: string[] = [];
  for (let p: Path | null = path; p; p = p.up) keys.push(p.key);
  return keys.reverse().join('/');
}

const escapeKey = (k: string) => k.replace(/~/g, '~0').replace(/\//g, '~1');

function collect(root: unknown, rootPointer: string, out: string[]): void {
  // Iterative: a body may nest thousands deep (bad-inputs H7), which recursion would turn into a stack overflow.
  const stack: [unknown, Path][] = [[root, { up: null, key: rootPointer }]];
  while (stack.length && out.length < 50) {
    const [value, path] = stack.pop()!;
    if (typeof value === 'string') {
      if (UNSTORABLE.test(value)) out.push(pointerOf(path));
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push([value[i], { up: path, key: String(i) }]);
    } else if (isPlain(value)) {
      for (const [k, v] of Object.entries(value).reverse()) {
        const at = { up: path, key: escapeKey(k) };
        if (UNSTORABLE.test(k)) out.push(pointerOf(at));
        else stack.push([v, at]);
      }
    }
  }
}

/**
 * Whether any string in `value` (keys included) holds NUL or a lone surrogate: the check every
 * request passes, so it keeps no paths and allocates only its stack; `collect` then names the
 * fields of the rare request that has some.
 */
export function hasUnstorableText(value: unknown): boolean {
  if (typeof value === 'string') return UNSTORABLE.test(value);
  if (!value || typeof value !== 'object') return false;
  const stack: unknown[] = [value];
  while (stack.length) {
    const next = stack.pop();
    if (typeof next === 'string') {
      if (UNSTORABLE.test(next)) return true;
    } else if (Array.isArray(next)) {
      for (const item of next) stack.push(item);
    } else if (isPlain(next)) {
      for (const key of Object.keys(next)) {
        if (UNSTORABLE.test(key)) return true;
        stack.push(next[key]);
      }
    }
  }
  return false;
}

/** 400 `validation` when any string in `value` (keys included) holds NUL or a lone surrogate. */
export function assertStorable(value: unknown, pointer = '/body'): void {
  if (!hasUnstorableText(value)) return;
  const bad: string[] = [];
  collect(value, pointer, bad);
  if (bad.length) {
    throw new HttpProblem(400, 'validation', 'Text with NUL characters or lone surrogates cannot be stored.', {
      errors: bad.slice(0, 20).map((p) => ({ pointer: p.replace(UNSTORABLE_ALL, '\ufffd'), detail: 'contains a NUL character or a lone surrogate' })),
    });
  }
}

/** A copy of `value` with every NUL and lone surrogate replaced by U+FFFD (keys included). */
export function cleanUnstorable<T>(value: T): T {
  if (typeof value === 'string') return value.replace(UNSTORABLE_ALL, '\ufffd') as T;
  if (Array.isArray(value)) return value.map(cleanUnstorable) as T;
  if (isPlain(value)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [cleanUnstorable(k), cleanUnstorable(v)])) as T;
  }
  return value;
}

/** Routes whose body is a signed payload from outside: their handlers check it after the signature. */
const SIGNED = new Set(['/api/webhook/chatapp', '/api/chatapp-auth/webhook/:appId']);

/**
 * Refuses NUL and lone surrogates in every route's parsed body, query and path parameters, after
 * the schema validation and the route's authentication (whose answers come first) and before the
 * handler can hand them to the database (bad-inputs H8; schemathesis found 500s where a handler had no check).
 * Call it before the routes are added.
 */
export function guardStorableText(app: FastifyInstance): void {
  const check = (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction): void => {
    try {
      assertStorable(request.params, '/path');
      assertStorable(request.query, '/query');
      assertStorable(request.body, '/body');
    } catch (error) {
      done(error as Error);
      return;
    }
    done();
  };
  app.addHook('onRoute', (route) => {
    if (SIGNED.has(route.url)) return;
    // A contract operation without path parameters, query or body has no text to check.
    const operation = route.config?.operation;
    if (operation && !operation.url.includes(':') && !operation.bodyTypes.length && !(operation.schema as { querystring?: unknown }).querystring) return;
    route.preHandler = [...[route.preHandler ?? []].flat(), check as never];
  });
}
