// Connect content routes outside the contract: the public viewer /l/<slug> (./viewer-page.ts),
// its assets (./assets/viewer.js and viewer.css, pdf.js from node_modules), the document bytes of a link and the reader
// activity beacons. Everything a browser can open under /l/ (the page, the file, the assets, an
// unknown or malformed path) is refused with the viewer's HTML error page; only the beacon route,
// which the page's script alone calls with a JSON body, answers problem+json. Everything here is
// limited per client IP by the global rate limiter (registered before the areas), assets excepted.
import { readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type {} from '@fastify/cookie';
import { readAssets, type Asset } from '#server/html/assets.js';
import { DueLoop } from '#server/lib/due-loop.js';
import { base62 } from '#server/lib/ids.js';
import { DEFAULT_IDLE_MS } from '#server/lib/wake-up.js';
import { HttpProblem } from '#server/lib/problems.js';
import { forgetVerification, phoneGate, verifiedPhone } from './phone-gate.js';
import { sendPhoneRefused, sendVerifyPage, sendViewer, sendViewerError, VIEWER_ASSETS, VIEWER_PREFIX } from './viewer-page.js';
import type { Platform } from '#server/platform.js';
import { contentDisposition } from './filenames.js';
import { SLUG_LENGTH } from './links.js';
import { applyBeacon, isPreviewBot, openSession, recordDownload, rendersInline, SESSION_LIMITS, sweepDue, type Beacon } from './sessions.js';
import { documentObject, sweepDocumentFiles } from './storage.js';
import { sendStored } from '#server/lib/storage/send.js';
import { linkStatus, type DocumentRow, type LinkRow } from './views.js';

const SLUG = new RegExp(`^[0-9A-Za-z]{${SLUG_LENGTH}}$`);
const READER = /^[0-9A-Za-z]{24}$/;
const readerCookie = (production: boolean) => (production ? '__Host-reader' : 'reader');

/** The link of a slug with its document, and whether it opens; null for an unknown slug. */
async function resolve(platform: Platform, slug: string): Promise<{ link: LinkRow; document: DocumentRow; active: boolean } | null> {
  if (!SLUG.test(slug)) return null;
  const link = await platform.store.db.selectFrom('links').selectAll().where('slug', '=', slug).executeTakeFirst();
  if (!link) return null;
  const current = await platform.store.db.selectFrom('documents').selectAll().where('id', '=', link.document_id).executeTakeFirstOrThrow();
  // A pinned link shows its version's file; the others the current one (the document row's).
  const pinned =
    link.version === null || link.version === current.version
      ? undefined
      : await platform.store.db
          .selectFrom('document_versions')
          .select(['version', 'filename', 'content_type', 'size_bytes', 'page_count', 'sha256', 'storage_key'])
          .where('document_id', '=', current.id)
          .where('version', '=', link.version)
          .executeTakeFirst();
  const document = pinned ? { ...current, ...pinned } : current;
  return { link, document, active: linkStatus(link, platform.now()) === 'active' && !document.deleted_at };
}

/** The reader's first-party cookie (random, no fingerprinting), set for a year if missing. */
function readerId(request: FastifyRequest, reply: FastifyReply): string {
  const name = readerCookie(request.server.config.production);
  const current = request.cookies?.[name];
  if (current && READER.test(current)) return current;
  const id = base62(24);
  reply.setCookie(name, id, { path: '/', httpOnly: true, sameSite: 'lax', secure: request.server.config.production, maxAge: 365 * 24 * 3600 });
  return id;
}

// ---- Assets -------------------------------------------------------------------------------------

/** The viewer's own script and stylesheet (./assets/), then pdf.js and its data from node_modules. */
function loadAssets(): Map<string, Asset> {
  const assets = readAssets(new URL('./assets/', import.meta.url), ['viewer.js', 'viewer.css']);
  const pdfjs = dirname(createRequire(import.meta.url).resolve('pdfjs-dist/package.json'));
  const js = 'text/javascript; charset=utf-8';
  assets.set('pdf.min.mjs', { body: readFileSync(join(pdfjs, 'legacy/build/pdf.min.mjs')), type: js });
  assets.set('pdf.worker.min.mjs', { body: readFileSync(join(pdfjs, 'legacy/build/pdf.worker.min.mjs')), type: js });
  // Fonts and character maps pdf.js fetches for PDFs that do not embed theirs: a fixed list.
  for (const dir of ['standard_fonts', 'cmaps']) {
    for (const name of readdirSync(join(pdfjs, dir))) {
      if (/^[\w.+-]+$/.test(name)) assets.set(`${dir}/${name}`, { body: readFileSync(join(pdfjs, dir, name)), type: 'application/octet-stream' });
    }
  }
  return assets;
}

// ---- Routes -------------------------------------------------------------------------------------

const BEACON_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['token'],
  properties: {
    token: { type: 'string', minLength: 16, maxLength: 64, pattern: '^[0-9A-Za-z]+$' },
    pages: {
      type: 'array',
      maxItems: 100,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['page', 'views', 'ms'],
        properties: {
          page: { type: 'integer', minimum: 1, maximum: 100_000 },
          views: { type: 'integer', minimum: 0, maximum: 100 },
          ms: { type: 'integer', minimum: 0, maximum: 3_600_000 },
        },
      },
    },
    ended: { type: 'boolean' },
  },
} as const;

const PARAMS = { type: 'object', properties: { slug: { type: 'string', maxLength: 64 }, sessionId: { type: 'string', maxLength: 64 } } } as const;

export async function setup(app: FastifyInstance): Promise<void> {
  const assets = loadAssets();
  const platform = app.platform;

  // Idle sessions end, and held-back session.updated events go out, from this sweeper: it sleeps
  // until the earliest is due; activity that holds an update back announces when that is.
  const sweeper = new DueLoop({
    store: platform.store,
    channel: 'reader_sessions_due',
    pass: () => sweepDue(platform),
    now: () => platform.now(),
    idleMs: platform.config.workers.idleMs ?? DEFAULT_IDLE_MS,
    log: (error) => app.log.error({ err: error }, 'reader session sweep failed'),
  });
  const heldBack = () => sweeper.announce(new Date(platform.now().getTime() + SESSION_LIMITS.updateEveryMs));
  app.addHook('onReady', async () => sweeper.start());
  app.addHook('preClose', async () => sweeper.stop());

  // Orphaned document files, both sides (./storage.ts), a few minutes after start and then hourly
  // on every instance (the work is idempotent; the jitter keeps instances apart).
  let fileSweep: NodeJS.Timeout | undefined;
  const sweepFiles = () =>
    sweepDocumentFiles(platform).then(
      (r) => {
        if (r.orphanObjects) app.log.info(r, 'orphaned document files removed');
        if (r.missingObjects) app.log.error(r, 'document rows whose file is missing from storage');
      },
      (error) => app.log.warn({ err: error }, 'document file sweep failed'),
    );
  app.addHook('onReady', async () => {
    const every = 60 * 60 * 1000;
    fileSweep = setTimeout(
      function again() {
        void sweepFiles().finally(() => {
          if (fileSweep) fileSweep = setTimeout(again, every).unref();
        });
      },
      5 * 60 * 1000 + Math.floor(Math.random() * 60_000),
    ).unref();
  });
  app.addHook('preClose', async () => {
    clearTimeout(fileSweep);
    fileSweep = undefined;
  });

  // Everything under /l/ but the beacons, in one scope whose refusals are the viewer's HTML error
  // page with its status (a reader's browser shows it): errors of these routes, and unknown paths
  // under /l (extra segments, a trailing slash). Malformed URLs and other methods are answered
  // before routing (server/app.ts, `refuse`), with the same page.
  await app.register(
    async (pages) => {
      pages.setErrorHandler((error: FastifyError, request, reply) => {
        const status =
          error instanceof HttpProblem ? error.status : error.statusCode && error.statusCode >= 400 && error.statusCode < 600 ? error.statusCode : 500;
        if (status >= 500) request.log.error({ err: error }, 'viewer page failed');
        return sendViewerError(
          reply,
          status,
          error instanceof HttpProblem && error.headers['retry-after'] ? { 'retry-after': error.headers['retry-after'] } : {},
        );
      });
      pages.setNotFoundHandler((_request, reply) => sendViewerError(reply, 404));

      pages.get<{ Params: { '*': string } }>(`${VIEWER_ASSETS.slice(VIEWER_PREFIX.length)}/*`, { config: { rateLimit: false } }, async (request, reply) => {
        const asset = assets.get(request.params['*']);
        if (!asset) throw new HttpProblem(404, 'not-found', 'No such asset.');
        return reply.headers({ 'content-type': asset.type, 'cache-control': 'public, max-age=3600' }).send(asset.body);
      });

      const VIEW_QUERY = { type: 'object', properties: { retry: { type: 'string', enum: ['1'] } } } as const;
      pages.get<{ Params: { slug: string }; Querystring: { retry?: '1' } }>(
        '/:slug',
        { schema: { params: PARAMS, querystring: VIEW_QUERY } },
        async (request, reply) => {
          const found = await resolve(platform, request.params.slug);
          if (!found) return sendViewerError(reply, 404);
          if (!found.active) return sendViewerError(reply, 410);
          const { link, document } = found;
          const userAgent = request.headers['user-agent'];
          const preview = request.method !== 'GET' || isPreviewBot(userAgent);
          // A phone-verified link opens for the recipient's verified number only (./phone-gate.ts).
          let phone: string | null = null;
          if (link.require_phone_verification) {
            if (request.query.retry === '1') {
              // Back to the plain address, which the verification page reloads: a new Login session there.
              forgetVerification(request, reply, link.slug);
              return reply.header('cache-control', 'no-store').redirect(`${VIEWER_PREFIX}/${link.slug}`, 303);
            }
            const gate = await phoneGate(app, request, reply, link, { preview });
            if (gate.kind === 'verify') return sendVerifyPage(reply, gate.page);
            if (gate.kind === 'refused') return sendPhoneRefused(reply, gate.phone, gate.retryUrl);
            phone = gate.phone;
          }
          // HEAD and link previews see the page but open no session and send no event.
          const opened = !preview ? await openSession(platform, link.id, document, readerId(request, reply), userAgent, phone) : undefined;
          if (opened === null) return sendViewerError(reply, 410);
          const base = `${VIEWER_PREFIX}/${link.slug}`;
          return sendViewer(reply, {
            title: document.title,
            filename: document.filename,
            kind: document.content_type === 'application/pdf' ? 'pdf' : rendersInline(document.content_type) ? 'image' : 'download',
            fileUrl: `${base}/file`,
            downloadUrl: link.allow_download ? `${base}/file?download=1${opened ? `&session=${opened.session.id}` : ''}` : null,
            pageCount: document.page_count,
            session: opened ? { beaconUrl: `${base}/sessions/${opened.session.id}/events`, token: opened.token } : undefined,
          });
        },
      );

      // The document bytes of a link, for the viewer (inline) or as a download (`?download=1`):
      // the download link is opened by the reader's browser, so its refusals are pages too.
      pages.get<{ Params: { slug: string }; Querystring: { download?: string; session?: string } }>(
        '/:slug/file',
        {
          schema: {
            params: PARAMS,
            querystring: { type: 'object', properties: { download: { type: 'string', enum: ['0', '1'] }, session: { type: 'string', maxLength: 64 } } },
          },
        },
        async (request, reply) => {
          const found = await resolve(platform, request.params.slug);
          if (!found) throw new HttpProblem(404, 'not-found', 'No document at this link.');
          if (!found.active) throw new HttpProblem(410, 'expired', 'This link has expired or was revoked.');
          const { link, document } = found;
          if (link.require_phone_verification && !(await verifiedPhone(request, link))) {
            throw new HttpProblem(403, 'forbidden', 'Verify the phone number this document was sent to first.');
          }
          const download = request.query.download === '1';
          // Office files are never shown inline: serving them would be a download in disguise.
          if ((download || !rendersInline(document.content_type)) && !link.allow_download) {
            throw new HttpProblem(403, 'forbidden', 'The sender has not allowed downloads of this document.');
          }
          if (download) {
            const name = readerCookie(platform.config.production);
            const reader = request.cookies?.[name];
            await recordDownload(platform, link, request.query.session, reader && /^[0-9A-Za-z]{24}$/.test(reader) ? reader : undefined);
            heldBack();
          }
          // Streamed from the storage, a range at a time when the viewer asks for one (large PDFs).
          const sent = await sendStored(request, reply, platform.storage, documentObject(document.storage_key), {
            'content-type': document.content_type,
            'content-disposition': contentDisposition(download ? 'attachment' : 'inline', document.filename),
            'x-content-type-options': 'nosniff',
            // Opened directly, a polyglot file can run nothing: a sandboxed, script-less origin.
            'content-security-policy': "sandbox; default-src 'none'",
            'cache-control': 'private, no-store',
            'referrer-policy': 'no-referrer',
          });
          if (!sent) {
            // A live row without its object: the storage lost it (the sweep counts these too).
            request.log.error({ document: document.id, version: document.version }, 'document file missing from storage');
            throw new HttpProblem(410, 'expired', 'This document is no longer available.');
          }
          return reply;
        },
      );
    },
    { prefix: VIEWER_PREFIX },
  );

  // Activity beacons of an open session, authenticated by the session's token from the page.
  app.post<{ Params: { slug: string; sessionId: string }; Body: Beacon }>(
    '/l/:slug/sessions/:sessionId/events',
    { bodyLimit: 8 * 1024, schema: { params: PARAMS, body: BEACON_SCHEMA } },
    async (request, reply) => {
      if (!SLUG.test(request.params.slug)) throw new HttpProblem(404, 'not-found', 'No open reader session with this id and token.');
      await applyBeacon(platform, request.params.slug, request.params.sessionId, request.body);
      heldBack();
      return reply.code(204).header('cache-control', 'no-store').send();
    },
  );
}
