// Shared steps of the Connect content tests: workspaces with Connect bearers, sample files
// (PDF, PNG, office zips, zip bombs), uploads, links, the viewer and its beacons, and counts of
// every content table (for "changes nothing" checks).
import { crc32, deflateRawSync } from 'node:zlib';
import { readdirSync, readFileSync } from 'node:fs';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';
import { join } from 'node:path';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import { newId } from '#server/lib/ids.js';
import { connectBearer } from '#test/support/connect.js';
import { signUp, type SignedUp } from '#test/unit/account/support.js';

export const PROBLEM = 'https://chatapp.example/problems/';
export const DOCS = '/api/connect/documents';
export const LINKS = '/api/connect/links';

export interface Tenant extends SignedUp {
  workspaceId: string;
  auth: { authorization: string };
}

export async function tenant(app: FastifyInstance, name?: string, scopes?: string[]): Promise<Tenant> {
  const owner = await signUp(app, name);
  const workspaceId = owner.workspace.id;
  const token = await connectBearer(app, workspaceId, scopes);
  return { ...owner, workspaceId, auth: { authorization: `Bearer ${token}` } };
}

// ---- Files --------------------------------------------------------------------------------------

/** A well-formed PDF of `pages` empty pages (offsets computed, so pdf.js reads it). */
export function pdf(pages = 3): Buffer {
  const kids = Array.from({ length: pages }, (_, i) => `${3 + i} 0 R`).join(' ');
  const objects = [`<< /Type /Catalog /Pages 2 0 R >>`, `<< /Type /Pages /Kids [${kids}] /Count ${pages} >>`];
  for (let i = 0; i < pages; i++) objects.push(`<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>`);
  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((o, i) => {
    offsets.push(out.length);
    out += `${i + 1} 0 obj\n${o}\nendobj\n`;
  });
  const xref = out.length;
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

export const PNG = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6360000002000100e221bc330000000049454e44ae426082',
  'hex',
);

interface ZipFile {
  name: string;
  data?: Buffer;
  /** Deflate `data` (default: stored). */
  deflate?: boolean;
}

/** A zip archive; zip64 end records when it has more than 65,535 entries. */
export function zip(files: ZipFile[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  const deflated = new Map<Buffer, Buffer>();
  for (const file of files) {
    const data = file.data ?? Buffer.alloc(0);
    const body = file.deflate ? (deflated.get(data) ?? deflated.set(data, deflateRawSync(data)).get(data)!) : data;
    const name = Buffer.from(file.name);
    const crc = crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(file.deflate ? 8 : 0, 8);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(body.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(file.deflate ? 8 : 0, 10);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(body.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, body);
    centrals.push(central, name);
    offset += 30 + name.length + body.length;
  }
  const directory = Buffer.concat(centrals);
  const tail: Buffer[] = [];
  const many = files.length > 0xffff;
  if (many) {
    const eocd64 = Buffer.alloc(56);
    eocd64.writeUInt32LE(0x06064b50, 0);
    eocd64.writeBigUInt64LE(44n, 4);
    eocd64.writeUInt16LE(45, 12);
    eocd64.writeUInt16LE(45, 14);
    eocd64.writeBigUInt64LE(BigInt(files.length), 24);
    eocd64.writeBigUInt64LE(BigInt(files.length), 32);
    eocd64.writeBigUInt64LE(BigInt(directory.length), 40);
    eocd64.writeBigUInt64LE(BigInt(offset), 48);
    const locator = Buffer.alloc(20);
    locator.writeUInt32LE(0x07064b50, 0);
    locator.writeBigUInt64LE(BigInt(offset + directory.length), 8);
    locator.writeUInt32LE(1, 16);
    tail.push(eocd64, locator);
  }
  const eocd = Buffer.alloc(22);
  eocd.writeUInt32LE(0x06054b50, 0);
  eocd.writeUInt16LE(many ? 0xffff : files.length, 8);
  eocd.writeUInt16LE(many ? 0xffff : files.length, 10);
  eocd.writeUInt32LE(directory.length, 12);
  eocd.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, ...tail, eocd]);
}

const CONTENT_TYPES: Record<string, string> = {
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml',
  pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml',
};
const MAIN_PART: Record<string, string> = { docx: '/word/document.xml', pptx: '/ppt/presentation.xml', xlsx: '/xl/workbook.xml' };

/** An office file (its [Content_Types].xml first, as Office writes it) with `extra` entries after. */
export function office(kind: 'docx' | 'pptx' | 'xlsx', extra: ZipFile[] = []): Buffer {
  const types = `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Override PartName="${MAIN_PART[kind]}" ContentType="${CONTENT_TYPES[kind]}"/></Types>`;
  return zip([{ name: '[Content_Types].xml', data: Buffer.from(types) }, { name: MAIN_PART[kind]!.slice(1), data: Buffer.from('<x/>') }, ...extra]);
}

// ---- Requests -----------------------------------------------------------------------------------

export interface UploadFile {
  bytes: Buffer;
  filename?: string;
  type?: string;
  title?: string;
  fields?: Record<string, string>;
}

/** A multipart/form-data body with one `file` part (and optional text parts). */
export function multipart(file: UploadFile): { payload: Buffer; headers: Record<string, string> } {
  const boundary = `----test${Math.random().toString(36).slice(2)}`;
  const parts: Buffer[] = [];
  const fields = { ...(file.title !== undefined ? { title: file.title } : {}), ...file.fields };
  for (const [name, value] of Object.entries(fields)) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
  }
  parts.push(
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${file.filename ?? 'brochure.pdf'}"\r\nContent-Type: ${file.type ?? 'application/pdf'}\r\n\r\n`,
    ),
    file.bytes,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  );
  return { payload: Buffer.concat(parts), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

export async function upload(app: FastifyInstance, who: Tenant, file: Partial<UploadFile> = {}): Promise<LightMyRequestResponse> {
  const { payload, headers } = multipart({ bytes: pdf(3), ...file });
  return app.inject({ method: 'POST', url: DOCS, headers: { ...who.auth, ...headers }, payload });
}

export async function newDocument(app: FastifyInstance, who: Tenant, file: Partial<UploadFile> = {}) {
  const res = await upload(app, who, file);
  expect(res.statusCode, res.body).toBe(201);
  return res.json();
}

export async function newLink(app: FastifyInstance, who: Tenant, documentId: string, body: Record<string, unknown> = {}) {
  const res = await app.inject({
    method: 'POST',
    url: LINKS,
    headers: who.auth,
    payload: {
      document_id: documentId,
      external_id: `crm-${newId('x').slice(2, 10)}`,
      recipient: { phone: '+4915112345678', email: 'lena@example.com' },
      ...body,
    },
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json();
}

export const slugOf = (url: string) => new URL(url).pathname.split('/').pop()!;

export interface Opened {
  res: LightMyRequestResponse;
  sessionId: string;
  token: string;
  beaconUrl: string;
  cookie: string;
}

const DESKTOP = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36';

/** Opens the viewer like a browser and reads the session's beacon URL and token from the page. */
export async function openViewer(app: FastifyInstance, url: string, headers: Record<string, string> = {}): Promise<Opened> {
  const res = await app.inject({ url: new URL(url).pathname, headers: { 'user-agent': DESKTOP, ...headers } });
  expect(res.statusCode, res.body).toBe(200);
  const beaconUrl = /data-beacon="([^"]*)"/.exec(res.body)?.[1] ?? '';
  const token = /data-token="([^"]*)"/.exec(res.body)?.[1] ?? '';
  const sessionId = /\/sessions\/(rs_[0-9A-Za-z]+)\/events/.exec(beaconUrl)?.[1] ?? '';
  const setCookie = [res.headers['set-cookie'] ?? []].flat()[0] ?? headers.cookie ?? '';
  return { res, sessionId, token, beaconUrl, cookie: String(setCookie).split(';')[0]! };
}

export function beacon(app: FastifyInstance, opened: Pick<Opened, 'beaconUrl' | 'token'>, body: Record<string, unknown>) {
  return app.inject({ method: 'POST', url: opened.beaconUrl, payload: { token: opened.token, ...body } });
}

// ---- State --------------------------------------------------------------------------------------

const TABLES = ['documents', 'links', 'reader_sessions', 'reader_page_stats', 'reading_totals', 'reading_pages', 'reading_readers', 'outbox'] as const;

/** Row counts of the content tables and the outbox, and the stored files. */
export async function snapshot(app: FastifyInstance): Promise<Record<string, unknown>> {
  const counts: Record<string, unknown> = {};
  for (const table of TABLES) {
    counts[table] = Number(
      (
        await app.platform.store.db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  }
  const sessions = await app.platform.store.db
    .selectFrom('reader_sessions')
    .select(['id', 'duration_ms', 'last_activity_at', 'ended_at', 'downloaded'])
    .orderBy('id')
    .execute();
  const pages = await app.platform.store.db.selectFrom('reader_page_stats').selectAll().orderBy('session_id').orderBy('page').execute();
  // The rollups kept with every view (reading.ts) change exactly when the sessions do.
  const totals = await app.platform.store.db.selectFrom('reading_totals').selectAll().orderBy('document_id').orderBy('link_id').orderBy('version').execute();
  const pageTotals = await app.platform.store.db
    .selectFrom('reading_pages')
    .selectAll()
    .orderBy('document_id')
    .orderBy('link_id')
    .orderBy('version')
    .orderBy('page')
    .execute();
  counts.state = JSON.stringify({ sessions, pages, totals, pageTotals });
  counts.files = storedFiles(app);
  return counts;
}

export function storedFiles(app: FastifyInstance): string[] {
  try {
    return readdirSync(join(app.config.dataDir, 'documents')).sort();
  } catch {
    return [];
  }
}

/** An enabled Connect webhook endpoint subscribed to every event, inserted directly. */
export async function webhookEndpoint(app: FastifyInstance, workspaceId: string): Promise<string> {
  const id = newId('whe');
  await app.platform.store.db
    .insertInto('webhook_endpoints')
    .values({
      id,
      workspace_id: workspaceId,
      api: 'connect',
      url: 'https://crm.test/hooks',
      description: null,
      event_types: ['link.opened', 'session.updated', 'link.revoked'],
      secret_enc: app.platform.secrets.encrypt('whsec_x'),
    })
    .execute();
  return id;
}

export async function outboxEvents(app: FastifyInstance, workspaceId: string, type?: string) {
  let query = app.platform.store.db.selectFrom('outbox').selectAll().where('workspace_id', '=', workspaceId);
  if (type) query = query.where('event_type', '=', type);
  const rows = await query.orderBy('created_at').execute();
  return rows.map((r) => JSON.parse(r.payload));
}

// ---- Contract schemas ----------------------------------------------------------------------------

let ajv: ReturnType<typeof makeAjv> | undefined;

function makeAjv() {
  const doc = parse(readFileSync(new URL('../../../../generated/connect/openapi.3.1.yaml', import.meta.url), 'utf8'));
  const instance = new Ajv2020.default({ strict: false, allErrors: true });
  addFormats.default(instance);
  instance.addSchema({ $id: 'connect', components: doc.components });
  return instance;
}

/** Errors of `value` against a component schema of the Connect 3.1 document (empty when valid). */
export async function schemaErrors(name: string, value: unknown): Promise<string[]> {
  ajv ??= makeAjv();
  const validate = ajv.getSchema(`connect#/components/schemas/${name}`);
  if (!validate) return [`no schema ${name}`];
  return validate(value) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
}
