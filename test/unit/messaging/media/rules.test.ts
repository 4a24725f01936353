// The media rules on their own: types told from the bytes, per-kind caps, display names (bad-inputs I1, I3, I5, I8).
import { describe, expect, it } from 'vitest';
import { checkMedia, displayName, MEDIA_RULES } from '#server/apis/messaging/media/rules.js';
import { parserProblem } from '#server/apis/messaging/media/parts.js';
import { HttpProblem } from '#server/lib/problems.js';
import { FILES } from './support.js';

async function refusal(p: Promise<unknown>): Promise<HttpProblem> {
  const error = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(HttpProblem);
  return error as HttpProblem;
}

describe('checkMedia', () => {
  it('the kind follows from the bytes, never from the declared type', async () => {
    expect(await checkMedia(FILES.png(), 'application/octet-stream')).toEqual({ kind: 'image', mimeType: 'image/png' });
    // What a client generated from the documents declares (the file part's encoding: any type).
    expect(await checkMedia(FILES.png(), '*/*')).toEqual({ kind: 'image', mimeType: 'image/png' });
    expect(await checkMedia(FILES.jpeg(), 'image/jpg')).toEqual({ kind: 'image', mimeType: 'image/jpeg' });
    expect(await checkMedia(FILES.mp4(), 'video/mp4')).toEqual({ kind: 'video', mimeType: 'video/mp4' });
    expect(await checkMedia(FILES.mp3(), 'audio/mp3')).toEqual({ kind: 'audio', mimeType: 'audio/mpeg' });
    expect(await checkMedia(FILES.opus(), 'audio/ogg')).toEqual({ kind: 'audio', mimeType: 'audio/ogg' });
    expect(await checkMedia(FILES.pdf(), 'application/pdf')).toEqual({ kind: 'document', mimeType: 'application/pdf' });
    expect(await checkMedia(FILES.text(), 'text/plain')).toEqual({ kind: 'document', mimeType: 'text/plain' });
    // A file part with no Content-Type (the parser's text/plain default; openapi-generator's rust client).
    expect(await checkMedia(FILES.png(), 'text/plain')).toEqual({ kind: 'image', mimeType: 'image/png' });
  });

  it('an MP4 sent as audio is audio/mp4', async () => {
    expect(await checkMedia(FILES.mp4(), '', 'audio')).toEqual({ kind: 'audio', mimeType: 'audio/mp4' });
  });

  it('I1 declared image/jpeg, bytes PDF: 415 naming both', async () => {
    const p = await refusal(checkMedia(FILES.pdf(), 'image/jpeg'));
    expect(p.status).toBe(415);
    expect(p.problem.detail).toBe('file is declared image/jpeg but its bytes are application/pdf.');
  });

  it('I1 PDF bytes sent as messageType image: 415 "content does not match image"', async () => {
    const p = await refusal(checkMedia(FILES.pdf(), 'application/pdf', 'image'));
    expect(p.status).toBe(415);
    expect(p.problem.errors).toEqual([{ pointer: '/body/file', detail: 'content does not match image' }]);
  });

  it('I1 HTML, WebP (a sticker, not an image here) and OGG Vorbis are refused: 415 naming what the bytes are', async () => {
    expect((await refusal(checkMedia(FILES.html(), 'text/plain'))).problem.detail).toContain('text/html');
    expect((await refusal(checkMedia(FILES.webp(), 'image/webp'))).problem.detail).toContain('image/webp');
    expect((await refusal(checkMedia(FILES.vorbis(), 'audio/ogg', 'audio'))).problem.detail).toContain('not Opus');
  });

  it("I3 one byte over the kind's cap: 413 with the cap; at the cap accepted", async () => {
    const cap = MEDIA_RULES.image.maxBytes;
    expect((await checkMedia(FILES.jpeg(cap), 'image/jpeg')).kind).toBe('image');
    const p = await refusal(checkMedia(FILES.jpeg(cap + 1), 'image/jpeg'));
    expect(p.status).toBe(413);
    expect(p.problem.detail).toContain('up to 5 MB');
  });

  it('I8 an empty file: 400', async () => {
    const p = await refusal(checkMedia(Buffer.alloc(0), 'image/png'));
    expect(p.status).toBe(400);
    expect(p.problem.errors).toEqual([{ pointer: '/body/file', detail: 'is empty' }]);
  });
});

describe('displayName', () => {
  it('I5 path segments, bidi overrides and control characters removed; the extension follows the bytes', () => {
    expect(displayName('../../etc/passwd', 'application/pdf', 'document')).toBe('passwd.pdf');
    expect(displayName('..\\..\\x.pdf', 'application/pdf', 'document')).toBe('x.pdf');
    expect(displayName('invoice\u202Efdp.exe', 'application/pdf', 'document')).toBe('invoicefdp.exe.pdf');
    expect(displayName('photo.JPG', 'image/jpeg', 'image')).toBe('photo.jpg');
    expect(displayName('', 'image/png', 'image')).toBe('image.png');
    const long = displayName(`${'a'.repeat(1000)}.pdf`, 'application/pdf', 'document');
    expect(long).toHaveLength(240);
    expect(long.endsWith('.pdf')).toBe(true);
  });
});

describe('parserProblem (multipart parser failures on the media routes)', () => {
  it('I3 I6 I7 each parser failure is a 4xx problem, never a 500', () => {
    const of = (error: unknown) => parserProblem(error);
    expect(of(Object.assign(new Error('x'), { code: 'FST_FILES_LIMIT', statusCode: 413 })).status).toBe(400);
    const big = of(Object.assign(new Error('x'), { code: 'FST_REQ_FILE_TOO_LARGE', statusCode: 413 }));
    expect([big.status, big.problem.detail]).toEqual([413, "The file is larger than 100 MB, the provider's largest limit (documents)."]);
    expect(of(Object.assign(new Error('x'), { code: 'FST_PARTS_LIMIT', statusCode: 413 })).status).toBe(400);
    expect(of(Object.assign(new Error('x'), { code: 'FST_FIELDS_LIMIT', statusCode: 413 })).status).toBe(400);
    expect(of(new Error('Unexpected end of form')).problem.type).toMatch(/malformed-body$/);
    expect(of(new Error('Multipart: Boundary not found')).status).toBe(400);
  });
});
