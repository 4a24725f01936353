// Client file names: sanitised for display and for Content-Disposition (RFC 6266 / 8187). The
// stored file never uses them (see storage.ts).

// Control characters (C0, DEL, C1), bidi overrides and isolates, zero-width characters and
// BOM: they hide or reorder what a reader sees (`invoice\u202Efdp.exe`) or split headers.
const INVISIBLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g;
// Characters that are path separators or reserved on common file systems.
const RESERVED = /[\\/:*?"<>|]/g;

const EXTENSIONS: Record<string, string[]> = {
  'application/pdf': ['pdf'],
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': ['docx'],
  'application/vnd.openxmlformats-officedocument.presentationml.presentation': ['pptx'],
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': ['xlsx'],
  'image/png': ['png'],
  'image/jpeg': ['jpg', 'jpeg'],
  'image/webp': ['webp'],
};

/** Cuts `value` to at most `max` UTF-16 units without splitting a surrogate pair. */
function cut(value: string, max: number): string {
  if (value.length <= max) return value;
  const end = /[\ud800-\udbff]/.test(value[max - 1]!) ? max - 1 : max;
  return value.slice(0, end);
}

/**
 * The name shown for an upload: the last path segment, NFC, without invisible or reserved
 * characters, no leading dots, ending in an extension of the detected type (so a download of
 * `report.html` holding a PDF is saved as `report.html.pdf`, never opened as HTML), at most
 * 255 characters.
 */
export function sanitiseFilename(raw: string | undefined, contentType: string): string {
  const last = (raw ?? '').split(/[\\/]/).pop() ?? '';
  let name = last.normalize('NFC').replace(INVISIBLE, '').replace(RESERVED, '_').replace(/\s+/g, ' ').trim();
  name = name.replace(/^[.\s]+/, '').replace(/[.\s]+$/, '');
  const extensions = EXTENSIONS[contentType] ?? [];
  const ext = /\.([^.]+)$/.exec(name)?.[1]?.toLowerCase();
  const wanted = extensions[0] ?? 'bin';
  const suffix = ext && extensions.includes(ext) ? '' : `.${wanted}`;
  if (!name) name = 'document';
  if (name.length + suffix.length <= 255) return name + suffix;
  // Too long: shorten the stem, keep the extension.
  const kept = suffix || `.${ext}`;
  const stem = suffix ? name : name.slice(0, -kept.length);
  return cut(stem, 255 - kept.length) + kept;
}

/** The default title: the file name without its extension, at most 200 characters. */
export function titleFromFilename(filename: string): string {
  const base = filename.replace(/\.[^.]+$/, '').trim();
  return cut(base || filename, 200);
}

/** Trims a given title and refuses one that is only invisible characters. */
export function cleanTitle(raw: string): string {
  return raw.replace(INVISIBLE, '').replace(/\s+/g, ' ').trim();
}

/** `attachment` or `inline` with an ASCII fallback name and the UTF-8 `filename*` (RFC 6266 §4.3). */
export function contentDisposition(kind: 'attachment' | 'inline', filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]/g, '_').replace(/["\\%]/g, '_');
  const encoded = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}
