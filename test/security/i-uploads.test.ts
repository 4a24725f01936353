// Group I of the bad-inputs catalogue: uploads, at both upload operations (Connect documents and
// Messaging media), against the shared fixture. Every refusal leaves no row in any table and no
// file under DATA_DIR (the only place uploads are written: both parsers buffer in memory).
// bad-inputs I4 applies to Connect only: Messaging media are never unpacked (a .docx is a `document` passed
// to the provider as bytes), which the bad-inputs I4 test for Messaging shows. Added: bad-inputs I9 (the
// contact import's own 20 MB cap, from Content-Length and while the file streams, never after buffering it).
import { readdirSync } from 'node:fs';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { MAX_UPLOAD_BYTES } from '#server/plugins/body-parsers.js';
import { buildShared } from '../helper.js';
import { multipart as documentPart, newLink, office, pdf, PNG, type Tenant, type UploadFile } from '../unit/connect/content/support.js';
import { FILES, multipart as mediaPart } from '../unit/messaging/media/support.js';
import { expectNoChange, expectProblem, workspace, type Workspace } from './support.js';
import { elapse } from '../support/eventually.js';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

let app: FastifyInstance;
let w: Workspace;
beforeAll(async () => {
  app = await buildShared({ env: { RATE_LIMIT_PER_MINUTE: '100000', RATE_LIMIT_IP_PER_MINUTE: '100000' } });
  w = await workspace(app);
});

const files = () => {
  try {
    return readdirSync(app.config.dataDir, { recursive: true }).length;
  } catch {
    return 0;
  }
};
const EXE = (() => {
  const b = Buffer.alloc(512);
  b.write('MZ', 0);
  b.writeUInt32LE(0x80, 0x3c);
  b.write('PE\0\0', 0x80, 'latin1');
  return b;
})();
const SVG = Buffer.from('<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(2)</script></svg>');
const HTML = FILES.html();

type Part = { bytes: Buffer; filename?: string; type?: string; fields?: Record<string, string> };
type Upload = {
  name: string;
  url: string;
  headers: () => Record<string, string>;
  body: (p: Part) => { payload: Buffer; headers: Record<string, string> };
  cap: number;
};

/** The two upload operations, each building its own multipart body with the helpers of its unit tests. */
const UPLOADS: Upload[] = [
  {
    name: 'Connect document',
    url: '/api/connect/documents',
    headers: () => ({ authorization: w.connect }),
    body: (p) => documentPart({ bytes: p.bytes, filename: p.filename ?? 'brochure.pdf', type: p.type ?? 'application/pdf', fields: p.fields } as UploadFile),
    cap: MAX_UPLOAD_BYTES,
  },
  {
    name: 'Messaging media',
    url: '/api/chatapp/media',
    headers: () => w.headers,
    body: (p) =>
      mediaPart({ chatapp_phone_number: w.number, ...p.fields }, [
        { filename: p.filename ?? 'brochure.pdf', type: p.type ?? 'application/pdf', bytes: p.bytes },
      ]),
    cap: 100 * 1024 * 1024, // documents: the provider's 100 MB
  },
];

const send = (u: Upload, p: Part) => {
  const { payload, headers } = u.body(p);
  return app.inject({ method: 'POST', url: u.url, headers: { ...u.headers(), ...headers }, payload });
};
const raw = (u: Upload, payload: Buffer | string, contentType: string) =>
  app.inject({ method: 'POST', url: u.url, headers: { ...u.headers(), 'content-type': contentType }, payload });
const nothing = <T>(act: () => Promise<T>) => expectNoChange(app, act, { probes: { files } });

describe.each(UPLOADS)('$name', (u) => {
  it('I1 declared application/pdf, bytes PNG, HTML or MZ; SVG or HTML declared as an image: 415 naming the detected type; no row, no file', async () => {
    const cases: [Part, RegExp][] = [
      [{ bytes: PNG, type: 'application/pdf' }, /image\/png/],
      [{ bytes: HTML, type: 'application/pdf' }, /text\/html/],
      [{ bytes: EXE, type: 'application/pdf' }, /application\/(x-msdownload|octet-stream|vnd\.microsoft\.portable-executable)/],
      [{ bytes: SVG, type: 'image/png', filename: 'logo.png' }, /image\/svg\+xml|xml/],
      [{ bytes: HTML, type: 'image/jpeg', filename: 'a.jpg' }, /text\/html/],
    ];
    await nothing(async () => {
      for (const [part, named] of cases) expect(expectProblem(await send(u, part), 415, 'unsupported-media-type').detail).toMatch(named);
    });
  });

  it('I2 polyglot (%PDF- header, then HTML): stored as PDF', async () => {
    const polyglot = Buffer.from('%PDF-1.4\n<html><body><script>alert(document.domain)</script></body></html>\n');
    const res = await send(u, { bytes: polyglot, filename: 'poly.html', type: 'application/pdf' });
    expect(res.statusCode, res.body).toBe(201);
    const body = res.json();
    expect(body.content_type ?? body.mime_type).toBe('application/pdf');
    if (u.name === 'Connect document') {
      const link = await newLink(app, { auth: u.headers() } as unknown as Tenant, body.id, { allow_download: true });
      for (const query of ['', '?download=1']) {
        const served = await app.inject({ url: `${new URL(link.url).pathname}/file${query}` });
        expect(served.statusCode).toBe(200);
        expect(served.headers['content-type']).toBe('application/pdf');
        expect(served.headers['x-content-type-options']).toBe('nosniff');
        expect(served.headers['content-security-policy']).toMatch(/^sandbox(;|$)/);
        expect(served.rawPayload.equals(polyglot)).toBe(true);
      }
    }
  });

  it('I3 one byte over the cap: 413 payload-too-large; no row, no partial file', async () => {
    const big = Buffer.alloc(u.cap + 1, 0x20);
    pdf(1).copy(big);
    await nothing(async () => expectProblem(await send(u, { bytes: big }), 413, 'payload-too-large'));
  });

  it('I5 hostile file names: sanitised, no path left, no control or bidi character', async () => {
    for (const given of ['../../etc/passwd', '..\\..\\x.pdf', '/abs.pdf', 'a%00.pdf', 'a\u0000b.pdf', `${'x'.repeat(1000)}.pdf`, 'invoice\u202Efdp.exe']) {
      const res = await send(u, { bytes: pdf(1), filename: given });
      expect(res.statusCode, `${given}: ${res.body}`).toBe(201);
      const name: string = res.json().filename;
      expect(name, given).not.toMatch(/[/\\\u0000-\u001f\u202a-\u202e\u2066-\u2069]|\.\./);
      expect(name.length).toBeLessThanOrEqual(255);
    }
    expect(
      readdirSync(app.config.dataDir, { recursive: true })
        .map(String)
        .every((f) => !f.includes('passwd') && !f.includes('abs.pdf')),
    ).toBe(true);
  });

  it('I6 1,000 file parts; 10,000 fields; a 10 MB field: 413 or 400; nothing stored', async () => {
    const boundary = 'XbOuNdArY';
    const part = (n: number) =>
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="f${n}.pdf"\r\nContent-Type: application/pdf\r\n\r\n%PDF-1.4\r\n`;
    const thousand = `${Array.from({ length: 1000 }, (_, i) => part(i)).join('')}--${boundary}--\r\n`;
    const fields = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`f${i}`, 'x']));
    await nothing(async () => {
      for (const res of [
        await raw(u, thousand, `multipart/form-data; boundary=${boundary}`),
        await send(u, { bytes: pdf(1), fields }),
        await send(u, { bytes: pdf(1), fields: { title: 'x'.repeat(10 * 1024 * 1024) } }),
      ]) {
        expect([400, 413], res.body).toContain(res.statusCode);
        expectProblem(res, res.statusCode, res.statusCode === 413 ? 'payload-too-large' : res.json().type.split('/').pop());
      }
    });
  });

  it('I7 no boundary, a wrong boundary, a body cut short: 400; no row, no file', async () => {
    const good = u.body({ bytes: pdf(1) });
    await nothing(async () => {
      for (const res of [
        await raw(u, good.payload, 'multipart/form-data'),
        await raw(u, good.payload, 'multipart/form-data; boundary=nope'),
        await raw(u, good.payload.subarray(0, good.payload.length - 40), good.headers['content-type']!),
      ]) {
        expect(res.statusCode, res.body).toBe(400);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      }
    });
  });

  it('I7 client gone mid-upload (real socket): no row, no file; the server keeps serving', async () => {
    const address = await app.listen({ port: 0, host: '127.0.0.1' }).catch(() => null);
    const port = address ? Number(new URL(address).port) : (app.server.address() as AddressInfo).port;
    const { payload, headers } = u.body({ bytes: Buffer.alloc(2 * 1024 * 1024, 0x20) });
    await nothing(async () => {
      const socket = net.connect(port, '127.0.0.1');
      await new Promise((r) => socket.once('connect', r));
      const head = Object.entries({ ...u.headers(), ...headers, 'content-length': String(payload.length) })
        .map(([k, v]) => `${k}: ${v}`)
        .join('\r\n');
      socket.write(`POST ${u.url} HTTP/1.1\r\nhost: 127.0.0.1\r\n${head}\r\n\r\n`);
      socket.write(payload.subarray(0, 512 * 1024));
      await elapse(100, 'a real socket: the server reads part of the body before the client goes');
      socket.destroy();
      await elapse(300, 'a real socket: the server notices the abort');
    });
    expect((await app.inject({ url: '/healthz' })).statusCode).toBeLessThan(500);
  });

  it('I8 an empty file: 400 naming /body/file; JSON sent to the upload operation: 415', async () => {
    await nothing(async () => {
      expect(expectProblem(await send(u, { bytes: Buffer.alloc(0) }), 400, 'validation').errors.map((e: { pointer: string }) => e.pointer)).toContain(
        '/body/file',
      );
      expectProblem(await raw(u, JSON.stringify({ file: 'JVBERi0=' }), 'application/json'), 415, 'unsupported-media-type');
    });
  });
});

describe('I4 archives', () => {
  it('I4 Connect: an office file inflating to 1 GB (16 entries of 64 MiB zeros): 422, never inflated past the cap, nothing stored', async () => {
    const zeros = Buffer.alloc(64 * 1024 * 1024);
    const bomb = office(
      'docx',
      Array.from({ length: 16 }, (_, i) => ({ name: `word/media/image${i}.bin`, data: zeros, deflate: true })),
    );
    expect(bomb.length).toBeLessThan(2 * 1024 * 1024);
    const heap = process.memoryUsage().rss;
    await nothing(async () => {
      const res = await send(UPLOADS[0]!, { bytes: bomb, filename: 'bomb.docx', type: 'application/octet-stream' });
      expect(expectProblem(res, 422, 'unprocessable').detail).toMatch(/zip bomb|inflate/);
    });
    expect(process.memoryUsage().rss - heap).toBeLessThan(512 * 1024 * 1024);
  });

  it('I4 Connect: a zip of 100,000 entries: 422, nothing stored', async () => {
    const many = office(
      'xlsx',
      Array.from({ length: 100_000 }, (_, i) => ({ name: `xl/e${i}` })),
    );
    await nothing(async () =>
      expectProblem(await send(UPLOADS[0]!, { bytes: many, filename: 'many.xlsx', type: 'application/octet-stream' }), 422, 'unprocessable'),
    );
  });

  it('I4 Messaging: a .docx is stored uninflated, byte for byte (size of the archive, not of its content)', async () => {
    const doc = office('docx', [{ name: 'word/media/big.bin', data: Buffer.alloc(8 * 1024 * 1024), deflate: true }]);
    const res = await send(UPLOADS[1]!, { bytes: doc, filename: 'a.docx', type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document' });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().size_bytes).toBe(doc.length);
  });
});

describe('I9 the CSV import cap (20 MB) before the bytes are buffered', () => {
  const MB = 1024 * 1024;
  const PART = Buffer.from('--B\r\nContent-Disposition: form-data; name="file"; filename="big.csv"\r\nContent-Type: text/csv\r\n\r\ncontact_no\n');
  /** The body's `i`-th megabyte: the file part's header first, then more of the file. */
  const megabyte = (i: number) => (i === 0 ? Buffer.concat([PART, Buffer.alloc(MB - PART.length, 0x20)]) : Buffer.alloc(MB, 0x20));

  /** A raw request on a real socket: the head, then up to `chunks` megabytes of body until the server answers; how much was sent by then. */
  async function raw(head: Record<string, string>, chunks: number, chunked: boolean) {
    const address = await app.listen({ port: 0, host: '127.0.0.1' }).catch(() => null);
    const port = address ? Number(new URL(address).port) : (app.server.address() as AddressInfo).port;
    const socket = net.connect(port, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    let answer = '';
    let done = false;
    const answered = new Promise<void>((resolve) => {
      socket.on('data', (d) => {
        answer += d.toString('latin1');
        if (answer.includes('\r\n\r\n')) resolve();
      });
      socket.on('close', () => resolve());
    }).then(() => {
      done = true;
    });
    socket.on('error', () => {});
    const lines = Object.entries(head).map(([k, v]) => `${k}: ${v}`);
    socket.write(`POST /api/contacts/imports HTTP/1.1\r\nhost: 127.0.0.1\r\n${lines.join('\r\n')}\r\n\r\n`);
    let sent = 0;
    for (let i = 0; i < chunks && !done && !socket.destroyed; i++) {
      const chunk = megabyte(i);
      const piece = chunked ? Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]) : chunk;
      sent += chunk.length;
      // Backpressure: the next megabyte only once the server read this one (or answered).
      if (!socket.write(piece)) await Promise.race([new Promise((r) => socket.once('drain', r)), answered]);
    }
    await answered;
    socket.destroy();
    return { status: Number(answer.split(' ')[1]), sent };
  }

  it('I9 a declared Content-Length over the cap: 413 after the headers, the body never sent; nothing stored', async () => {
    await nothing(async () => {
      const r = await raw({ ...w.headers, 'content-type': 'multipart/form-data; boundary=B', 'content-length': String(100 * MB) }, 0, false);
      expect(r).toEqual({ status: 413, sent: 0 });
    });
  });

  it('I9 a chunked body (no Content-Length) over the cap: 413 once the file passes 20 MB, long before 60 MB are sent; nothing stored', async () => {
    await nothing(async () => {
      const r = await raw({ ...w.headers, 'content-type': 'multipart/form-data; boundary=B', 'transfer-encoding': 'chunked' }, 60, true);
      expect(r.status).toBe(413);
      expect(r.sent).toBeLessThan(40 * MB);
    });
  });
});
