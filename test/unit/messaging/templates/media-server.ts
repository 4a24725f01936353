// A media host on 127.0.0.1 for header_url and media-URL checks: a JPEG, a PDF, a PNG too large
// for an image header, an HTML page, a 404 and a redirect to the JPEG. Counts requests per path.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(2000, 1)]);
const PDF = Buffer.from('%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n');

export async function startMediaServer() {
  const hits = new Map<string, number>();
  const server = createServer((req, res) => {
    const path = req.url ?? '/';
    hits.set(path, (hits.get(path) ?? 0) + 1);
    if (path === '/img.jpg') return res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': JPEG.length }).end(JPEG);
    if (path === '/doc.pdf') return res.writeHead(200, { 'content-type': 'application/pdf', 'content-length': PDF.length }).end(PDF);
    if (path === '/big.png') {
      const big = Buffer.alloc(6 * 1024 * 1024, 7);
      return res.writeHead(200, { 'content-type': 'image/png', 'content-length': big.length }).end(big);
    }
    if (path === '/page.html') return res.writeHead(200, { 'content-type': 'text/html' }).end('<html></html>');
    if (path === '/moved.jpg') return res.writeHead(302, { location: '/img.jpg' }).end();
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    hits,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
