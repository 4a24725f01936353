// The tenant-isolation sweep's inputs, read from the generated documents: every operation with a
// path parameter, the credentials its security requirement accepts, and a request body taken
// from its own successful example (so validation passes and only the id decides the answer).
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { sql } from 'kysely';
import type { FastifyInstance } from 'fastify';
import { eventually } from '../support/eventually.js';

export const APIS = ['account', 'connect', 'login', 'messaging'] as const;
export type Api = (typeof APIS)[number];

export interface Operation {
  api: Api;
  method: string;
  path: string;
  operationId: string;
  /** Path parameter names, left to right. */
  params: string[];
  /** Table key of each parameter: `<api>:<name>`, generic names (`id`) qualified by their collection. */
  keys: string[];
  /** Security schemes, one alternative each; `[]` for a public operation. */
  schemes: string[];
  /** A body of a documented 2xx example, or undefined when the operation takes none. */
  body?: { contentType: string; value: unknown };
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** `<api>:<name>`; `id` alone names nothing, so it takes the collection before it (`contacts/id`). */
function keyOf(api: Api, path: string, name: string): string {
  if (name !== 'id') return `${api}:${name}`;
  const segments = path.split('/');
  const at = segments.indexOf(`{${name}}`);
  return `${api}:${segments[at - 1]}/id`;
}

/** Request example whose same-named response example is a 2xx (opExamples pair them by name). */
function successBody(op: any): Operation['body'] {
  const content = op.requestBody?.content as Record<string, any> | undefined;
  if (!content) return undefined;
  const [contentType, media] = Object.entries(content)[0]!;
  // A multipart operation gets a small well-formed form (one `file` part): only the id decides.
  if (contentType === 'multipart/form-data') {
    const form = '--sweep\r\nContent-Disposition: form-data; name="file"; filename="a.pdf"\r\nContent-Type: application/pdf\r\n\r\n%PDF-1.4\r\n--sweep--\r\n';
    return { contentType: 'multipart/form-data; boundary=sweep', value: form };
  }
  const examples = (media.examples ?? {}) as Record<string, { value: unknown }>;
  const ok = new Set<string>();
  for (const [status, res] of Object.entries(op.responses ?? {}) as [string, any][]) {
    if (!/^2/.test(status)) continue;
    for (const m of Object.values(res.content ?? {}) as any[]) for (const name of Object.keys(m.examples ?? {})) ok.add(name);
  }
  const name = Object.keys(examples).find((n) => ok.has(n)) ?? Object.keys(examples)[0];
  return { contentType, value: name ? examples[name]!.value : (media.example ?? {}) };
}

const documents = new Map<Api, any>();
const documentOf = (api: Api) =>
  documents.get(api) ?? documents.set(api, parse(readFileSync(new URL(`../../generated/${api}/openapi.3.1.yaml`, import.meta.url), 'utf8'))).get(api);

export function operationsWithPathIds(): Operation[] {
  return allOperations().filter((op) => op.params.length > 0);
}

/** Operations that never run without a credential: every alternative of their `security` names a scheme. */
export function securedOperations(): Operation[] {
  return allOperations().filter((op) => {
    const security = (op.security ?? []) as Record<string, string[]>[];
    return security.length > 0 && security.every((requirement) => Object.keys(requirement).length > 0);
  });
}

function allOperations(): (Operation & { security: unknown })[] {
  const out: (Operation & { security: unknown })[] = [];
  for (const api of APIS) {
    const doc = documentOf(api);
    for (const [path, item] of Object.entries(doc.paths as Record<string, any>)) {
      const params = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
      for (const method of METHODS) {
        const op = item[method];
        if (!op) continue;
        const security = (op.security ?? doc.security ?? []) as Record<string, string[]>[];
        out.push({
          api,
          method: method.toUpperCase(),
          path,
          operationId: op.operationId,
          params,
          keys: params.map((p) => keyOf(api, path, p)),
          schemes: security.flatMap((s) => Object.keys(s)),
          body: successBody(op),
          security,
        });
      }
    }
  }
  return out;
}

export const urlOf = (op: Operation, ids: Record<string, string>) => op.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(ids[name]!));

/**
 * A digest per table of every row's content (row counts miss an UPDATE). `last_used_at` is left
 * out: calling with B's key stamps B's key, which is the point of that column, not a change to A.
 */
export async function contentDigest(app: FastifyInstance): Promise<Record<string, string>> {
  const db = app.platform.store.db;
  const tables = await sql<{
    name: string;
  }>`select table_name as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE' and table_name not like 'kysely_%' order by 1`.execute(
    db,
  );
  const out: Record<string, string> = {};
  for (const { name } of tables.rows) {
    const r = await sql<{
      h: string | null;
    }>`select md5(string_agg(j, '|' order by j)) as h from (select (to_jsonb(x) - 'last_used_at')::text as j from ${sql.table(name)} x) t`.execute(db);
    out[name] = r.rows[0]!.h ?? '';
  }
  return out;
}

/** Tables whose digest differs between two snapshots. */
export function changedTables(before: Record<string, string>, after: Record<string, string>): string[] {
  return Object.keys({ ...before, ...after }).filter((t) => before[t] !== after[t]);
}

/**
 * Lets A's background work settle before B's call is measured: defers every pending delivery not
 * leased right now (to unreachable test URLs) by a day, and repeats until no row is leased. Deferring
 * first means the worker cannot claim a row between the check and the deferral; deferring once more
 * after the last check catches a row whose attempt ended with a retry in between.
 */
export async function quiesce(app: FastifyInstance): Promise<void> {
  const db = app.platform.store.db;
  const defer = () =>
    db
      .updateTable('outbox')
      .set({ next_attempt_at: new Date(Date.now() + 86_400_000) })
      .where('status', '=', 'pending')
      .where('lease_until', 'is', null)
      .execute();
  await eventually(
    async () => {
      await defer();
      return !(await db.selectFrom('outbox').select('id').where('lease_until', 'is not', null).where('status', '=', 'pending').executeTakeFirst());
    },
    { within: 10_000, what: 'no delivery leased', every: 50 },
  );
  await defer();
}
