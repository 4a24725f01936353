// Compression of the published documents and docs pages (not of API answers): the Messaging
// reference loads a dereferenced document of megabytes and Scalar's script, which brotli or gzip
// shrink about tenfold. An onSend hook of the scope that serves them: answers of 1 KiB and more
// with a textual type leave in the best encoding the client accepts (br, then gzip), with
// `Vary: Accept-Encoding`. The large constant bodies (documents, the script) are compressed once
// per encoding, on a worker thread of zlib, and kept; pages are compressed per answer.
import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

const brotli = promisify(brotliCompress);
const gzipAsync = promisify(gzip);

type Encoding = 'br' | 'gzip';

const MIN_BYTES = 1024;
/** Bodies at least this large are kept compressed, by route and encoding, while their source is the same. */
const KEEP_BYTES = 64 * 1024;
const TEXTUAL = /^(text\/|application\/(json|problem\+json|yaml|javascript|xml)|image\/svg\+xml)/;

/** The encoding to answer with: br or gzip when accepted (q above 0), br first; else none. */
export function chooseEncoding(header: string | undefined): Encoding | undefined {
  if (!header) return undefined;
  const accepted = new Map<string, number>();
  for (const part of header.split(',')) {
    const [name = '', ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    const q = params.find((p) => p.startsWith('q='));
    accepted.set(name, q ? Number(q.slice(2)) || 0 : 1);
  }
  const q = (name: Encoding) => accepted.get(name) ?? accepted.get('*') ?? 0;
  if (q('br') > 0 && q('br') >= q('gzip')) return 'br';
  if (q('gzip') > 0) return 'gzip';
  return undefined;
}

function compress(body: Buffer, encoding: Encoding, keep: boolean): Promise<Buffer> {
  if (encoding === 'gzip') return gzipAsync(body, { level: keep ? 9 : 6 });
  // Quality 9 for what is compressed once; 5 (fast, still well below gzip) per answer.
  return brotli(body, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: keep ? 9 : 5,
      [constants.BROTLI_PARAM_SIZE_HINT]: body.length,
      [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
    },
  });
}

/** Adds the hook to `scope`: every route of that scope (and its children) is served compressed. */
export function compressAnswers(scope: FastifyInstance): void {
  const kept = new Map<string, { source: string | Buffer; body: Promise<Buffer> }>();
  scope.addHook('onSend', async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    if (typeof payload !== 'string' && !Buffer.isBuffer(payload)) return payload; // streams, empty answers
    if (request.method === 'HEAD' || reply.statusCode === 204 || reply.statusCode === 304 || reply.hasHeader('content-encoding')) return payload;
    if (!TEXTUAL.test(String(reply.getHeader('content-type') ?? ''))) return payload;
    const size = typeof payload === 'string' ? Buffer.byteLength(payload) : payload.length;
    if (size < MIN_BYTES) return payload;
    const vary = String(reply.getHeader('vary') ?? '');
    if (!/accept-encoding/i.test(vary)) reply.header('vary', vary ? `${vary}, Accept-Encoding` : 'Accept-Encoding');
    const encoding = chooseEncoding(request.headers['accept-encoding']);
    if (!encoding) return payload;
    const keep = size >= KEEP_BYTES && reply.statusCode === 200;
    let body: Buffer;
    if (keep) {
      // By route, not URL (a query string must not grow the map); a route whose body changes replaces its entry.
      const key = `${encoding}\0${request.routeOptions.url}`;
      let entry = kept.get(key);
      if (!entry || entry.source !== payload) {
        const work = compress(Buffer.isBuffer(payload) ? payload : Buffer.from(payload), encoding, true);
        entry = { source: payload, body: work };
        kept.set(key, entry);
        work.catch(() => kept.delete(key));
      }
      body = await entry.body;
    } else body = await compress(Buffer.isBuffer(payload) ? payload : Buffer.from(payload), encoding, false);
    reply.header('content-encoding', encoding);
    reply.removeHeader('content-length');
    return body;
  });
}
