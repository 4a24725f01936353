// A local webhook receiver on 127.0.0.1 that records what it gets and answers as told.
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

export async function startReceiver(answer: (req: Received) => number | Promise<number> = () => 200) {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      const entry = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      received.push(entry);
      res.statusCode = await answer(entry);
      res.end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
