// Multipart bodies written byte by byte (so tests can also break them) and small files whose
// first bytes are what file-type reads: the media rules are checked on real signatures.
export const BOUNDARY = '----media-test-boundary-7MA4YWxkTrZu0gW';

export interface FilePartSpec {
  field?: string;
  filename: string;
  type: string;
  bytes: Buffer;
}

export function multipart(
  fields: Record<string, string>,
  files: FilePartSpec[] = [],
  boundary = BOUNDARY,
): { payload: Buffer; headers: Record<string, string> } {
  const chunks: Buffer[] = [];
  for (const [name, value] of Object.entries(fields)) {
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
  }
  for (const f of files) {
    chunks.push(
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${f.field ?? 'file'}"; filename="${f.filename}"\r\nContent-Type: ${f.type}\r\n\r\n`),
      f.bytes,
      Buffer.from('\r\n'),
    );
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(chunks), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

const pad = (head: Buffer, size: number) => Buffer.concat([head, Buffer.alloc(Math.max(0, size - head.length), 0x20)]);

export const FILES = {
  png: (size = 256) => pad(Buffer.from('89504e470d0a1a0a0000000d494844520000000100000001080600000037', 'hex'), size),
  jpeg: (size = 256) => pad(Buffer.from('ffd8ffe000104a46494600010100000100010000', 'hex'), size),
  pdf: (size = 256) => pad(Buffer.from('%PDF-1.4\n1 0 obj<<>>endobj\n'), size),
  mp4: (size = 256) => pad(Buffer.from('000000186674797069736f6d0000020069736f6d6d703432', 'hex'), size),
  mp3: (size = 256) => pad(Buffer.from('fffb9064000000000000', 'hex'), size),
  opus: (size = 256) => pad(Buffer.concat([Buffer.from('OggS'), Buffer.alloc(24), Buffer.from('OpusHead')]), size),
  vorbis: (size = 256) => pad(Buffer.concat([Buffer.from('OggS'), Buffer.alloc(24), Buffer.from([1]), Buffer.from('vorbis')]), size),
  webp: () => Buffer.concat([Buffer.from('RIFF'), Buffer.from([0x24, 0, 0, 0]), Buffer.from('WEBPVP8 '), Buffer.alloc(200)]),
  html: () => Buffer.from('<!doctype html><html><body><script>alert(1)</script></body></html>'),
  text: () => Buffer.from('Order 1042\nShipped today.\n'),
};
