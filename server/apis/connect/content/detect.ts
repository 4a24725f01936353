// What an upload is, from its bytes: the type by magic numbers (file-type; office zips are told
// apart by their [Content_Types].xml, which file-type inflates with a 1 MiB cap), a zip-bomb check
// of office files from their central directory (never inflated here), and the page count.
import { fileTypeFromBuffer } from 'file-type';
import { saysNothing } from '#server/lib/declared-type.js';
import { HttpProblem } from '#server/lib/problems.js';

export const ALLOWED_TYPES = [
  'application/pdf',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  'image/png',
  'image/jpeg',
  'image/webp',
] as const;
export type DocumentType = (typeof ALLOWED_TYPES)[number];

const OFFICE = new Set<string>(ALLOWED_TYPES.filter((t) => t.includes('officedocument')));

const ALIASES: Record<string, string> = {
  'image/jpg': 'image/jpeg',
  'image/pjpeg': 'image/jpeg',
  'application/x-pdf': 'application/pdf',
  'application/acrobat': 'application/pdf',
};

/** Office files may inflate to at most this much in all (their declared sizes), in at most this many entries. */
export const OFFICE_LIMITS = { inflatedBytes: 256 * 1024 * 1024, entries: 10_000, ratio: 200 };

/** The detected type of content file-type does not know: markup and text, named for the 415 detail. */
function sniffUnknown(bytes: Buffer): string {
  const head = bytes
    .subarray(0, 1024)
    .toString('utf8')
    .replace(/^\ufeff/, '')
    .trimStart()
    .toLowerCase();
  if (/^(<\?xml[^>]*>\s*)?(<!--[\s\S]*?-->\s*)*(<!doctype svg|<svg)/.test(head) || head.includes('<svg')) return 'image/svg+xml';
  if (/^<(!doctype html|html|head|body|script|iframe|div|p|a|img|meta|title|style)\b/.test(head)) return 'text/html';
  if (head.startsWith('<?xml')) return 'application/xml';
  if (!bytes.subarray(0, 4096).includes(0)) return 'text/plain';
  return 'application/octet-stream';
}

function unsupported(detail: string): HttpProblem {
  return new HttpProblem(415, 'unsupported-media-type', detail);
}

/** The document type of `bytes`, or 415 naming what was detected; `declared` must agree unless generic. */
export async function detectType(bytes: Buffer, declared: string | undefined): Promise<DocumentType> {
  const found = await fileTypeFromBuffer(bytes);
  // file-type stops at "XML" for SVG, and knows no HTML or text: name those from the markup.
  const detected = found && found.mime !== 'application/xml' ? found.mime : sniffUnknown(bytes);
  if (!(ALLOWED_TYPES as readonly string[]).includes(detected)) {
    throw unsupported(`The file's content is ${detected}, which is not accepted; upload PDF, DOCX, PPTX, XLSX, PNG, JPEG or WebP.`);
  }
  const given = (declared ?? '').split(';')[0]!.trim().toLowerCase();
  const normalised = ALIASES[given] ?? given;
  const agrees = saysNothing(normalised) || normalised === detected || (normalised === 'application/zip' && OFFICE.has(detected));
  if (!agrees) throw unsupported(`The file is declared as ${given} but its content is ${detected}.`);
  return detected as DocumentType;
}

// ---- Office files (zip) -----------------------------------------------------------------------

interface ZipEntry {
  name: string;
  compressed: number;
  uncompressed: number;
}

const EOCD = 0x06054b50;
const EOCD64_LOCATOR = 0x07064b50;
const EOCD64 = 0x06064b50;
const CENTRAL = 0x02014b50;

function tooBig(detail: string): HttpProblem {
  return new HttpProblem(422, 'unprocessable', detail);
}

/** The central directory of a zip: names and declared sizes, read without inflating anything. */
export function readZipDirectory(bytes: Buffer): ZipEntry[] {
  // The end record is in the last 64 KiB + 22 bytes (its comment is at most 65535 bytes).
  let eocd = -1;
  for (let i = bytes.length - 22; i >= Math.max(0, bytes.length - 22 - 65_535); i--) {
    if (bytes.readUInt32LE(i) === EOCD) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw tooBig('The office file is not a readable zip archive.');
  let count = bytes.readUInt16LE(eocd + 10);
  let size = bytes.readUInt32LE(eocd + 12);
  let offset = bytes.readUInt32LE(eocd + 16);
  if (count === 0xffff || size === 0xffffffff || offset === 0xffffffff) {
    const locator = eocd - 20;
    if (locator < 0 || bytes.readUInt32LE(locator) !== EOCD64_LOCATOR) throw tooBig('The office file is not a readable zip archive.');
    const at = Number(bytes.readBigUInt64LE(locator + 8));
    if (at + 56 > bytes.length || bytes.readUInt32LE(at) !== EOCD64) throw tooBig('The office file is not a readable zip archive.');
    count = Number(bytes.readBigUInt64LE(at + 32));
    size = Number(bytes.readBigUInt64LE(at + 40));
    offset = Number(bytes.readBigUInt64LE(at + 48));
  }
  if (count > OFFICE_LIMITS.entries) throw tooBig(`The office file has ${count} entries; at most ${OFFICE_LIMITS.entries} are accepted.`);
  if (offset + size > bytes.length) throw tooBig('The office file is not a readable zip archive.');
  const entries: ZipEntry[] = [];
  let at = offset;
  for (let i = 0; i < count; i++) {
    if (at + 46 > bytes.length || bytes.readUInt32LE(at) !== CENTRAL) throw tooBig('The office file is not a readable zip archive.');
    let compressed = bytes.readUInt32LE(at + 20);
    let uncompressed = bytes.readUInt32LE(at + 24);
    const nameLength = bytes.readUInt16LE(at + 28);
    const extraLength = bytes.readUInt16LE(at + 30);
    const commentLength = bytes.readUInt16LE(at + 32);
    const name = bytes.subarray(at + 46, at + 46 + nameLength).toString('utf8');
    if (uncompressed === 0xffffffff || compressed === 0xffffffff) {
      // zip64 extended information (header id 1): the 64-bit sizes, uncompressed first.
      const extra = bytes.subarray(at + 46 + nameLength, at + 46 + nameLength + extraLength);
      for (let p = 0; p + 4 <= extra.length; ) {
        const id = extra.readUInt16LE(p);
        const length = extra.readUInt16LE(p + 2);
        if (id === 1) {
          let q = p + 4;
          if (uncompressed === 0xffffffff && q + 8 <= extra.length) {
            uncompressed = Number(extra.readBigUInt64LE(q));
            q += 8;
          }
          if (compressed === 0xffffffff && q + 8 <= extra.length) compressed = Number(extra.readBigUInt64LE(q));
        }
        p += 4 + length;
      }
    }
    entries.push({ name, compressed, uncompressed });
    at += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}

/**
 * Refuses an office file whose entries would inflate past the caps (a zip bomb), and answers its
 * slide count (PPTX) or null. Nothing is inflated: the file is stored and served as uploaded.
 */
export function inspectOffice(bytes: Buffer, type: DocumentType): number | null {
  const entries = readZipDirectory(bytes);
  let total = 0;
  for (const entry of entries) {
    total += entry.uncompressed;
    if (entry.uncompressed > 1024 * 1024 && entry.uncompressed > entry.compressed * OFFICE_LIMITS.ratio) {
      throw tooBig(
        `The office file's entry ${JSON.stringify(entry.name.slice(0, 100))} would inflate ${Math.round(entry.uncompressed / Math.max(1, entry.compressed))} times; it looks like a zip bomb.`,
      );
    }
  }
  if (total > OFFICE_LIMITS.inflatedBytes)
    throw tooBig(`The office file would inflate to ${total} bytes; at most ${OFFICE_LIMITS.inflatedBytes} are accepted.`);
  if (type !== 'application/vnd.openxmlformats-officedocument.presentationml.presentation') return null;
  return entries.filter((e) => /^ppt\/slides\/slide\d+\.xml$/.test(e.name)).length || null;
}

// ---- PDF ----------------------------------------------------------------------------------------

/** The page count from pdf.js (legacy build, runs in Node); null when it cannot tell in time. */
export async function pdfPageCount(bytes: Buffer, timeoutMs = 10_000): Promise<number | null> {
  const { getDocument } = await import('pdfjs-dist/legacy/build/pdf.mjs');
  // pdf.js takes ownership of (detaches) the array it is given: hand it a copy.
  const task = getDocument({ data: new Uint8Array(bytes), isEvalSupported: false, disableFontFace: true, stopAtErrors: true, verbosity: 0 });
  let timer: NodeJS.Timeout | undefined;
  try {
    const timeout = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), timeoutMs);
    });
    const doc = await Promise.race([task.promise, timeout]);
    if (!doc) return null;
    const pages = doc.numPages;
    return Number.isInteger(pages) && pages > 0 && pages <= 2_147_483_647 ? pages : null;
  } catch {
    return null; // not parseable as PDF (a polyglot, a damaged file): stored, page count unknown
  } finally {
    clearTimeout(timer);
    await task.destroy().catch(() => {});
  }
}
