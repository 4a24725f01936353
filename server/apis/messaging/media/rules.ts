// What the provider accepts from the device, per kind (Meta's Cloud API media rules): the types,
// told from the bytes with file-type (never from the declared type or the file name), and the
// size caps. Checked before any provider call, so a refused file costs nothing and stores nothing.
import { fileTypeFromBuffer } from 'file-type';
import { saysNothing } from '#server/lib/declared-type.js';
import { HttpProblem } from '#server/lib/problems.js';

export type MediaKind = 'image' | 'video' | 'audio' | 'document';

const MB = 1024 * 1024;
const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const XLSX = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';
const PPTX = 'application/vnd.openxmlformats-officedocument.presentationml.presentation';
const LEGACY_OFFICE = ['application/msword', 'application/vnd.ms-excel', 'application/vnd.ms-powerpoint'];

export const MEDIA_RULES: Record<MediaKind, { types: string[]; maxBytes: number; label: string; names: string }> = {
  image: { types: ['image/jpeg', 'image/png'], maxBytes: 5 * MB, label: 'Images', names: 'JPEG or PNG' },
  video: { types: ['video/mp4', 'video/3gpp'], maxBytes: 16 * MB, label: 'Videos', names: 'MP4 or 3GPP' },
  audio: {
    types: ['audio/aac', 'audio/amr', 'audio/mpeg', 'audio/mp4', 'audio/ogg'],
    maxBytes: 16 * MB,
    label: 'Audio files',
    names: 'AAC, AMR, MP3, MP4 audio or OGG Opus',
  },
  document: {
    types: ['application/pdf', 'text/plain', DOCX, XLSX, PPTX, ...LEGACY_OFFICE],
    maxBytes: 100 * MB,
    label: 'Documents',
    names: 'PDF, text, Word, Excel or PowerPoint',
  },
};

/** The largest file any kind accepts: the multipart parser's cap on these routes. */
export const MAX_MEDIA_BYTES = MEDIA_RULES.document.maxBytes;

/** The file extensions a display name should end in, per type. */
export const EXTENSIONS: Record<string, string[]> = {
  'image/jpeg': ['jpg', 'jpeg'],
  'image/png': ['png'],
  'video/mp4': ['mp4'],
  'video/3gpp': ['3gp'],
  'audio/aac': ['aac'],
  'audio/amr': ['amr'],
  'audio/mpeg': ['mp3'],
  'audio/mp4': ['m4a', 'mp4'],
  'audio/ogg': ['ogg', 'opus'],
  'application/pdf': ['pdf'],
  'text/plain': ['txt'],
  [DOCX]: ['docx'],
  [XLSX]: ['xlsx'],
  [PPTX]: ['pptx'],
  'application/msword': ['doc'],
  'application/vnd.ms-excel': ['xls'],
  'application/vnd.ms-powerpoint': ['ppt'],
};

const ALIASES: Record<string, string> = {
  'image/jpg': 'image/jpeg',
  'image/pjpeg': 'image/jpeg',
  'audio/mp3': 'audio/mpeg',
  'audio/x-m4a': 'audio/mp4',
  'audio/m4a': 'audio/mp4',
  'audio/opus': 'audio/ogg',
  'audio/x-aac': 'audio/aac',
  'audio/3gpp': 'video/3gpp',
  'application/x-pdf': 'application/pdf',
};

export interface CheckedMedia {
  kind: MediaKind;
  mimeType: string;
}

const POINTER = '/body/file';

function unsupported(detail: string, pointerDetail: string): HttpProblem {
  return new HttpProblem(415, 'unsupported-media-type', detail, { errors: [{ pointer: POINTER, detail: pointerDetail }] });
}

const normalise = (type: string) => {
  const base = type.split(';')[0]!.trim().toLowerCase();
  return ALIASES[base] ?? base;
};

/** The type of the bytes as the provider names it; `null` for content none of the rules knows. */
async function detect(bytes: Buffer, declared: string): Promise<string> {
  const found = await fileTypeFromBuffer(bytes);
  if (found) {
    // Meta takes OGG audio only with the Opus codec; file-type names Opus `audio/ogg; codecs=opus`.
    if (found.mime === 'audio/ogg') return 'audio/ogg (not Opus)';
    if (found.mime === 'application/x-cfb') return LEGACY_OFFICE.includes(declared) ? declared : 'application/x-cfb';
    return normalise(found.mime);
  }
  // No magic number: plain text when it decodes as UTF-8 without NUL and is not markup.
  const head = bytes.subarray(0, 64 * 1024);
  if (head.includes(0)) return 'application/octet-stream';
  try {
    // `stream` when cut: a character split at the cut is not an encoding error.
    new TextDecoder('utf-8', { fatal: true }).decode(head, { stream: bytes.length > head.length });
  } catch {
    return 'application/octet-stream';
  }
  const text = head
    .toString('utf8')
    .replace(/^\ufeff/, '')
    .trimStart()
    .toLowerCase();
  if (/^<(\?xml|!doctype|html|svg|head|body|script)/.test(text))
    return text.includes('<svg') ? 'image/svg+xml' : text.startsWith('<?xml') ? 'application/xml' : 'text/html';
  return 'text/plain';
}

/**
 * Checks a file for `kind` (a send's messageType) or, without one, for whichever kind its bytes
 * are (an upload): empty 400; type 415 naming what the bytes are; size 413 with the kind's cap.
 */
export async function checkMedia(bytes: Buffer, declaredType: string, kind?: MediaKind): Promise<CheckedMedia> {
  if (bytes.length === 0) throw new HttpProblem(400, 'validation', 'The file is empty.', { errors: [{ pointer: POINTER, detail: 'is empty' }] });
  const declared = normalise(declaredType);
  const detected = await detect(bytes, declared);
  // An MP4 holding only audio is often labelled video/mp4 by its brand: as audio it is audio/mp4.
  const asKind = kind === 'audio' && detected === 'video/mp4' ? 'audio/mp4' : detected;
  const found = kind ?? (Object.keys(MEDIA_RULES) as MediaKind[]).find((k) => MEDIA_RULES[k].types.includes(asKind));
  if (!found || !MEDIA_RULES[found].types.includes(asKind)) {
    const accepted = kind
      ? `${kind}: ${MEDIA_RULES[kind].names}`
      : Object.values(MEDIA_RULES)
          .map((r) => r.names)
          .join('; ');
    throw unsupported(
      `The file's bytes are ${detected}, which is not accepted${kind ? ` as ${kind}` : ''} (accepted: ${accepted}).`,
      kind ? `content does not match ${kind}` : `content ${detected} is not accepted`,
    );
  }
  // A file part sent without a Content-Type of its own is text/plain to the multipart parser (RFC
  // 7578's default; openapi-generator's rust client sends none): with bytes that are not text it
  // says nothing, and the bytes type the file as they do for `*/*`.
  const untyped = declared === 'text/plain' && !asKind.startsWith('text/');
  const agrees =
    saysNothing(declared) || untyped || declared === asKind || declared === detected || (declared === 'application/zip' && [DOCX, XLSX, PPTX].includes(asKind));
  if (!agrees) throw unsupported(`file is declared ${declared} but its bytes are ${detected}.`, `content does not match ${declared}`);
  const rule = MEDIA_RULES[found];
  if (bytes.length > rule.maxBytes) {
    throw new HttpProblem(413, 'payload-too-large', `${rule.label} may be up to ${rule.maxBytes / MB} MB; this file has ${bytes.length} bytes.`, {
      errors: [{ pointer: POINTER, detail: `larger than ${rule.maxBytes / MB} MB` }],
    });
  }
  return { kind: found, mimeType: asKind };
}

// Control characters, bidi overrides, zero-width characters: they hide or reorder what the customer sees.
const INVISIBLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g;
const RESERVED = /[\\/:*?"<>|]/g;

/** The name the customer sees: last path segment, no invisible or reserved characters, an extension of the detected type, ≤ 240 characters. */
export function displayName(raw: string | undefined, mimeType: string, kind: MediaKind): string {
  const last = (raw ?? '').split(/[\\/]/).pop() ?? '';
  let name = last
    .normalize('NFC')
    .replace(INVISIBLE, '')
    .replace(RESERVED, '_')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^[.\s]+/, '')
    .replace(/[.\s]+$/, '');
  const extensions = EXTENSIONS[mimeType] ?? ['bin'];
  const ext = /\.([^.]+)$/.exec(name)?.[1]?.toLowerCase();
  const keep = ext !== undefined && extensions.includes(ext);
  if (!name) name = kind;
  const stem = keep ? name.slice(0, -(ext!.length + 1)) : name;
  const tail = keep ? `.${ext}` : `.${extensions[0]}`;
  // Cut to fit without splitting a surrogate pair.
  let cut = stem.slice(0, 240 - tail.length);
  if (/[\ud800-\udbff]$/.test(cut)) cut = cut.slice(0, -1);
  return (cut || kind) + tail;
}
