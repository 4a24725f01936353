// CSV imports as jobs. The request checks the file's shape at once (UTF-8, quoting, a header with
// `contact_no` and only known columns, size and row caps) and answers 202 with the job; the job
// then checks every row, merges rows of the same number, and only when no row is refused writes
// them all in one transaction, with the job's completion: a file is imported whole or not at all.
// Jobs run one at a time per instance (bounded memory); a job interrupted by a restart is marked
// failed at the next start (nothing of it was committed).
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from 'fastify';
import { sql, type Selectable, type Transaction } from 'kysely';
import type { CountryCode } from 'libphonenumber-js/min';
import type { components, operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import type { Handler } from '#server/lib/handler-types.js';
import { newId } from '#server/lib/ids.js';
import { readPhone } from '#server/lib/phone.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { Platform } from '#server/platform.js';
import type { Database } from '#server/store/schema.js';
import type { ContactImportError, ContactImportsTable } from '#server/store/schema/messaging-crm.js';
import { workspaceCountry } from '../configuration/messaging-settings.js';
import { fileParts } from '../media/parts.js';
import { CsvError, readCsv, TooManyRows, unguard, type CsvRow } from './csv.js';
import { loadFieldDefinitions, mergeCustomValues } from './custom-values.js';
import type { FieldDefinitions } from './segment-filter.js';
import { stopEnrolments } from './opt-out.js';
import { ensureTags } from './tags.js';

type Job = components['schemas']['ContactImport'];
type JobRow = Selectable<ContactImportsTable>;
type Value = string | number;

export const MAX_IMPORT_BYTES = 20 * 1024 * 1024;
export const MAX_IMPORT_ROWS = 200_000;
/** Refused rows kept on the job; the count covers them all. */
const KEPT_ERRORS = 100;
/** Contacts written per statement. */
const CHUNK = 5000;
/** A job still running this long after it was created at start-up was cut off by a restart. */
const INTERRUPTED_AFTER_MS = 10 * 60 * 1000;
const BASE_COLUMNS = new Set(['contact_no', 'name', 'email', 'tags', 'opted_out']);
const TAG = /^[^\s,\u0000-\u001F\u007F][^,\u0000-\u001F\u007F]{0,63}$/;
const EMAIL = /^[^\s@"<>,;]{1,64}@[^\s@"<>,;]+\.[^\s@"<>,;]+$/;
const TRUE = new Set(['true', 'yes', '1']);
const FALSE = new Set(['false', 'no', '0']);

interface Parsed {
  phone: string;
  name?: string;
  email?: string;
  tags: string[];
  optedOut?: boolean;
  custom: Record<string, Value>;
}

const view = (r: JobRow): Job => ({
  id: r.id,
  status: r.status,
  filename: r.filename,
  total_rows: r.total_rows,
  processed_rows: r.processed_rows,
  created: r.created_count,
  updated: r.updated_count,
  merged: r.merged_count,
  error_count: r.error_count,
  errors: r.errors,
  failure_reason: r.failure_reason,
  created_at: new Date(r.created_at).toISOString(),
  finished_at: r.finished_at ? new Date(r.finished_at).toISOString() : null,
});

const badFile = (detail: string, field = detail) => new HttpProblem(400, 'validation', detail, { errors: [{ pointer: '/body/file', detail: field }] });

/** The file's bytes as text: UTF-8 (a BOM is dropped), no NUL. */
function decode(bytes: Buffer): string {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw badFile('The CSV is not UTF-8 text; save it as "CSV UTF-8".', 'is not UTF-8');
  }
  if (text.includes('\u0000')) throw badFile('The CSV contains NUL characters; it is not a text file.', 'contains NUL characters');
  return text;
}

/** The header's columns, checked: `contact_no` present, each known and once. */
function checkHeader(header: CsvRow | undefined, fields: FieldDefinitions): string[] {
  if (!header) throw badFile('The CSV is empty; it needs a header line naming its columns.', 'is empty');
  const columns = header.cells.map((c) => c.trim().toLowerCase());
  const unknown = columns.filter((c) => !BASE_COLUMNS.has(c) && !fields.has(c));
  if (unknown.length)
    throw badFile(
      `The CSV has columns that are neither contact fields nor custom fields: ${unknown.slice(0, 10).join(', ')}.`,
      `unknown column ${unknown.slice(0, 10).join(', ')}`,
    );
  const twice = columns.find((c, i) => columns.indexOf(c) !== i);
  if (twice) throw badFile(`The CSV names the column ${twice} twice.`, `column ${twice} appears twice`);
  if (!columns.includes('contact_no')) throw badFile('The CSV has no contact_no column.', 'needs a contact_no column');
  return columns;
}

/** The row's values, or its errors. */
function parseRow(row: CsvRow, columns: string[], fields: FieldDefinitions, country: CountryCode | null): Parsed | ContactImportError[] {
  if (row.cells.length !== columns.length) return [{ line: row.line, column: null, detail: `has ${row.cells.length} cells; the header has ${columns.length}` }];
  const errors: ContactImportError[] = [];
  const fail = (column: string, detail: string) => errors.push({ line: row.line, column, detail });
  const out: Parsed = { phone: '', tags: [], custom: {} };
  const custom: Record<string, Value> = {};
  columns.forEach((column, i) => {
    // A quoted cell keeps its spaces (an export writes values with outer spaces quoted).
    const value = unguard(row.quoted[i] ? row.cells[i]! : row.cells[i]!.trim());
    if (/[\u0000-\u0008\u000B\u000C\u000E-\u001F]/.test(value)) return fail(column, 'contains control characters');
    switch (column) {
      case 'contact_no': {
        if (!value) return fail(column, 'is empty');
        const phone = readPhone(value, country);
        if (!phone.ok) return fail(column, phone.reason);
        out.phone = phone.e164;
        return;
      }
      case 'name':
        if (value.length > 200) return fail(column, 'is longer than 200 characters');
        if (value) out.name = value;
        return;
      case 'email':
        if (value && (value.length > 254 || !EMAIL.test(value))) return fail(column, 'is not an email address');
        if (value) out.email = value;
        return;
      case 'tags': {
        const tags = value
          .split(',')
          .map((t) => t.trim())
          .filter(Boolean);
        if (tags.length > 50) return fail(column, 'has more than 50 tags');
        const bad = tags.find((t) => !TAG.test(t));
        if (bad !== undefined) return fail(column, `tag ${JSON.stringify(bad.slice(0, 70))} is not a tag name (1–64 characters, no control characters)`);
        out.tags = tags;
        return;
      }
      case 'opted_out': {
        const v = value.toLowerCase();
        if (TRUE.has(v)) out.optedOut = true;
        else if (FALSE.has(v)) out.optedOut = false;
        else if (v) fail(column, 'must be true or false');
        return;
      }
      default: {
        if (!value) return;
        const type = fields.get(column)?.type;
        if (type === 'number') {
          const n = Number(value);
          if (!Number.isFinite(n)) return fail(column, 'must be a number');
          custom[column] = n;
        } else custom[column] = value;
      }
    }
  });
  if (Object.keys(custom).length) {
    try {
      out.custom = mergeCustomValues({}, custom, fields, '');
    } catch (error) {
      if (!(error instanceof HttpProblem)) throw error;
      for (const e of error.problem.errors ?? []) fail(e.pointer.slice(1), e.detail);
    }
  }
  return errors.length ? errors : out;
}

/** Merges `next` into `into`: its non-empty values win, tags add up. */
function merge(into: Parsed, next: Parsed): void {
  if (next.name !== undefined) into.name = next.name;
  if (next.email !== undefined) into.email = next.email;
  if (next.optedOut !== undefined) into.optedOut = next.optedOut;
  const have = new Set(into.tags.map((t) => t.toLowerCase()));
  for (const t of next.tags) if (!have.has(t.toLowerCase())) into.tags.push(t);
  Object.assign(into.custom, next.custom);
}

async function writeContacts(trx: Transaction<Database>, workspaceId: string, contacts: Parsed[], at: Date) {
  const tagIds = new Map<string, string>();
  const names = [...new Set(contacts.flatMap((c) => c.tags.map((t) => t.toLowerCase())))];
  if (names.length) {
    const originals = new Map(contacts.flatMap((c) => c.tags.map((t) => [t.toLowerCase(), t] as const)));
    await ensureTags(
      trx,
      workspaceId,
      names.map((n) => originals.get(n)!),
      at,
    );
    const rows = await trx.selectFrom('tags').select(['id', 'name']).where('workspace_id', '=', workspaceId).execute();
    for (const r of rows) tagIds.set(r.name.toLowerCase(), r.id);
  }
  let created = 0;
  const optedOut: string[] = [];
  for (let i = 0; i < contacts.length; i += CHUNK) {
    const chunk = contacts.slice(i, i + CHUNK);
    // One statement per chunk whatever its size: the rows travel as one array per column.
    const { rows } = await sql<{ id: string; phone: string; inserted: boolean }>`
      insert into contacts (id, workspace_id, phone, name, email, custom_fields, opted_out_at, opt_out_source, created_at, updated_at)
      select r.id, ${workspaceId}, r.phone, r.name, r.email, r.custom::jsonb,
        case when r.opted then ${at}::timestamptz end, case when r.opted then 'import' end, ${at}, ${at}
      from unnest(${chunk.map(() => newId('ct'))}::text[], ${chunk.map((c) => c.phone)}::text[], ${chunk.map((c) => c.name ?? null)}::text[],
        ${chunk.map((c) => c.email ?? null)}::text[], ${chunk.map((c) => JSON.stringify(c.custom))}::text[], ${chunk.map((c) => c.optedOut === true)}::bool[])
        as r(id, phone, name, email, custom, opted)
      on conflict (workspace_id, phone) do update set
        name = coalesce(excluded.name, contacts.name),
        email = coalesce(excluded.email, contacts.email),
        custom_fields = contacts.custom_fields || excluded.custom_fields,
        opted_out_at = coalesce(contacts.opted_out_at, excluded.opted_out_at),
        opt_out_source = case when contacts.opted_out_at is null then excluded.opt_out_source else contacts.opt_out_source end,
        updated_at = ${at}
      returning id, phone, (xmax = 0) as inserted`.execute(trx);
    created += rows.filter((r) => r.inserted).length;
    const idOf = new Map(rows.map((r) => [r.phone, r.id]));
    const contactIds: string[] = [];
    const linkTags: string[] = [];
    for (const c of chunk)
      for (const t of c.tags) {
        contactIds.push(idOf.get(c.phone)!);
        linkTags.push(tagIds.get(t.toLowerCase())!);
      }
    if (contactIds.length)
      await sql`insert into contact_tags (contact_id, tag_id, created_at)
        select c, t, ${at} from unnest(${contactIds}::text[], ${linkTags}::text[]) as l(c, t)
        on conflict do nothing`.execute(trx);
    for (const c of chunk) if (c.optedOut === true) optedOut.push(idOf.get(c.phone)!);
    const optedIn = chunk.filter((c) => c.optedOut === false).map((c) => c.phone);
    if (optedIn.length)
      await sql`update contacts set opted_out_at = null, opt_out_source = null
        where workspace_id = ${workspaceId} and phone = any(${optedIn}::text[])`.execute(trx);
  }
  for (let i = 0; i < optedOut.length; i += CHUNK) await stopEnrolments(trx, optedOut.slice(i, i + CHUNK), at);
  return { created, updated: contacts.length - created };
}

/** Checks every row, then writes them all or none. */
async function runImport(
  platform: Platform,
  job: { id: string; workspaceId: string; columns: string[]; text: string; total: number; fields: FieldDefinitions; country: CountryCode | null },
) {
  const db = platform.store.db;
  const errors: ContactImportError[] = [];
  let errorCount = 0;
  const byPhone = new Map<string, Parsed>();
  let merged = 0;
  let i = -1;
  // The file is read again row by row (the request checked its shape): never all rows at once.
  for (const row of readCsv(job.text)) {
    if (i++ < 0) continue;
    const parsed = parseRow(row, job.columns, job.fields, job.country);
    if (Array.isArray(parsed)) {
      errorCount++;
      if (errors.length < KEPT_ERRORS) errors.push(...parsed.slice(0, KEPT_ERRORS - errors.length));
    } else {
      const earlier = byPhone.get(parsed.phone);
      if (earlier) {
        merge(earlier, parsed);
        merged++;
      } else byPhone.set(parsed.phone, parsed);
    }
    if ((i + 1) % 20_000 === 0) {
      await db
        .updateTable('contact_imports')
        .set({ processed_rows: i + 1 })
        .where('id', '=', job.id)
        .execute();
      // Lets requests in between (a progress read among them).
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  const at = platform.now();
  if (errorCount) {
    await db
      .updateTable('contact_imports')
      .set({ status: 'failed', processed_rows: job.total, error_count: errorCount, errors: JSON.stringify(errors), finished_at: at })
      .where('id', '=', job.id)
      .execute();
    return;
  }
  await db.updateTable('contact_imports').set({ status: 'importing', processed_rows: job.total }).where('id', '=', job.id).execute();
  await db.transaction().execute(async (trx) => {
    // New contacts go to the pending lists of the GIN (trigram, custom field) indexes instead of
    // each being merged into them one by one; they are merged in bulk after the commit.
    await sql`set local gin_pending_list_limit = '64MB'`.execute(trx);
    const { created, updated } = await writeContacts(trx, job.workspaceId, [...byPhone.values()], at);
    await trx
      .updateTable('contact_imports')
      .set({ status: 'completed', created_count: created, updated_count: updated, merged_count: merged, finished_at: platform.now() })
      .where('id', '=', job.id)
      .execute();
  });
}

/**
 * Merges the GIN pending lists of `contacts` into their indexes now, in bulk (searches read a
 * pending list row by row until it is). If it fails, autovacuum does it later: only logged.
 */
async function mergePendingLists(platform: Platform, log: FastifyBaseLogger) {
  await sql`select gin_clean_pending_list(i.indexrelid)
      from pg_index i join pg_class c on c.oid = i.indexrelid join pg_am a on a.oid = c.relam
      where i.indrelid = 'contacts'::regclass and a.amname = 'gin'`
    .execute(platform.store.db)
    .catch((error: unknown) => log.warn({ err: error }, 'contact import: GIN pending lists not merged'));
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The contact imports of this instance, run one after another. */
    contactImports: { queue: Promise<void> };
  }
}

function fileOf(request: FastifyRequest): { bytes: Buffer; filename: string | null } {
  if (!request.isMultipart()) throw new HttpProblem(415, 'unsupported-media-type', 'Send the CSV as multipart/form-data, in a part named file.');
  const body = (request.body ?? {}) as Record<string, unknown>;
  const unknown = Object.keys(body).find((k) => k !== 'file');
  if (unknown)
    throw new HttpProblem(400, 'validation', `${unknown} is not a known part.`, { errors: [{ pointer: `/body/${unknown}`, detail: 'is not a known part' }] });
  const part = fileParts(request).find((p) => p.fieldname === 'file');
  if (!Buffer.isBuffer(body.file) || !part) throw badFile('Send the CSV in a file part named file.', 'must be a file part (with a filename)');
  if (body.file.length > MAX_IMPORT_BYTES)
    throw new HttpProblem(413, 'payload-too-large', `The CSV is larger than ${MAX_IMPORT_BYTES / 1024 / 1024} MB; split it.`, {
      errors: [{ pointer: '/body/file', detail: 'too large' }],
    });
  return { bytes: body.file, filename: part.filename ? part.filename.slice(0, 255) : null };
}

export const createContactImport: Handler<operations['createContactImport']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const { platform } = request.server;
  const { bytes, filename } = fileOf(request);
  const text = decode(bytes);
  // The whole file's shape is checked now (quoting, row count); its rows are kept as the text.
  let header: CsvRow | undefined;
  let total = 0;
  try {
    for (const row of readCsv(text)) {
      if (!header) header = row;
      else if (++total > MAX_IMPORT_ROWS) throw new TooManyRows(MAX_IMPORT_ROWS);
    }
  } catch (error) {
    if (error instanceof TooManyRows)
      throw new HttpProblem(413, 'payload-too-large', `The CSV has more than ${MAX_IMPORT_ROWS} rows; split it.`, {
        errors: [{ pointer: '/body/file', detail: 'too many rows' }],
      });
    if (error instanceof CsvError) throw badFile(`The CSV is malformed at ${error.message}.`, error.message);
    throw error;
  }
  const fields = await loadFieldDefinitions(platform.store.db, workspaceId);
  const columns = checkHeader(header, fields);
  const country = await workspaceCountry(platform.store.db, workspaceId);
  const job = await platform.store.db
    .insertInto('contact_imports')
    .values({ id: newId('imp'), workspace_id: workspaceId, status: 'validating', filename, total_rows: total, created_at: platform.now() })
    .returningAll()
    .executeTakeFirstOrThrow();
  const imports = request.server.contactImports;
  imports.queue = imports.queue.then(() =>
    runImport(platform, { id: job.id, workspaceId, columns, text, total, fields, country }).then(
      () => mergePendingLists(platform, request.server.log),
      async (error: unknown) => {
        request.server.log.error({ err: error, importId: job.id }, 'contact import failed');
        await platform.store.db
          .updateTable('contact_imports')
          .set({ status: 'failed', failure_reason: 'The import failed inside the server; nothing was written. Try again.', finished_at: platform.now() })
          .where('id', '=', job.id)
          .execute()
          .catch(() => undefined);
      },
    ),
  );
  reply.code(202);
  return view(job);
};

export const getContactImport: Handler<operations['getContactImport']> = async (request) => {
  const { workspaceId } = authOf(request);
  const { id } = request.params;
  const row = await request.server.platform.store.db
    .selectFrom('contact_imports')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst();
  if (!row) throw new HttpProblem(404, 'not-found', `No import ${id} in this workspace.`);
  return view(row);
};

/** The area's plugin part: the queue, drained on close; jobs cut off by a restart marked failed. */
export async function setupContactImports(app: FastifyInstance): Promise<void> {
  app.decorate('contactImports', { queue: Promise.resolve() });
  const { platform } = app;
  app.addHook('onReady', async () => {
    await platform.store.db
      .updateTable('contact_imports')
      .set({
        status: 'failed',
        failure_reason: 'The server restarted during the import; nothing was written. Upload the file again.',
        finished_at: platform.now(),
      })
      .where('status', 'in', ['validating', 'importing'])
      .where('created_at', '<', new Date(platform.now().getTime() - INTERRUPTED_AFTER_MS))
      .execute();
  });
  app.addHook('onClose', async () => {
    await app.contactImports.queue;
  });
}
