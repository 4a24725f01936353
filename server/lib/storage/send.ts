// A stored object as an HTTP answer, streamed, honouring one `Range: bytes=…` (RFC 9110 §14):
// 206 with Content-Range for a satisfiable range; the whole object (200) for a multi-range, a
// malformed header or a range past the end (a server may ignore Range, §14.2, and none of the
// operations serving files declares a 416). Every answer says Accept-Ranges: bytes, so a viewer
// fetches the pages of a large PDF as it needs them.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ByteRange, ObjectStorage } from './types.js';

/** The one range of `header` within `size` bytes; undefined to answer the whole. */
export function parseRange(header: string | undefined, size: number): ByteRange | undefined {
  if (!header) return undefined;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return undefined;
  if (m[1] === '') {
    // A suffix: the last N bytes.
    const n = Number(m[2]);
    if (n === 0 || size === 0) return undefined;
    return { start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (m[2] !== '' && Number(m[2]) < start) return undefined;
  if (start >= size) return undefined;
  return { start, end };
}

/**
 * Sends `key` with `headers` (type, disposition…), or answers false when the object is absent
 * (the caller's 404 or 410). `size`, when the caller knows it, spares a look-up for a range.
 */
export async function sendStored(
  request: FastifyRequest,
  reply: FastifyReply,
  storage: ObjectStorage,
  key: string,
  headers: Record<string, string>,
  size?: number,
): Promise<boolean> {
  const header = request.headers.range;
  let range: ByteRange | undefined;
  if (header) {
    const total = size ?? (await storage.stat(key))?.size;
    if (total === undefined) return false;
    range = parseRange(header, total);
  }
  const file = await storage.read(key, range);
  if (!file) return false;
  reply.headers({ ...headers, 'accept-ranges': 'bytes' });
  if (range) {
    reply
      .code(206)
      .header('content-range', `bytes ${range.start}-${range.end}/${file.size}`)
      .header('content-length', String(range.end - range.start + 1));
  } else {
    reply.header('content-length', String(file.size));
  }
  await reply.send(file.stream);
  return true;
}
