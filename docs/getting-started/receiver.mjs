#!/usr/bin/env node
// Stands in for your app in the getting-started guides: `node docs/getting-started/receiver.mjs 3903 &`
// listens on 127.0.0.1:3903, answers every request `200 ok`, and keeps each webhook delivery
// as it arrived, named by its event type: deliveries/<type>.headers.json (the headers) and
// deliveries/<type>.json (the raw body, the bytes the signature covers). deliveries/ is emptied
// at start.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';

const port = Number(process.argv[2] ?? 3903);
rmSync('deliveries', { recursive: true, force: true });
mkdirSync('deliveries');

http
  .createServer((request, response) => {
    const chunks = [];
    request.on('data', (chunk) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      let type = 'request';
      try {
        type = String(JSON.parse(body.toString('utf8')).type ?? type).replace(/[^\w.-]/g, '_');
      } catch {}
      // The headers first: a reader waiting for the body finds both.
      writeFileSync(`deliveries/${type}.headers.json`, JSON.stringify(request.headers, null, 2));
      writeFileSync(`deliveries/${type}.json`, body);
      response.end('ok');
    });
  })
  .listen(port, '127.0.0.1', () => console.log(`your app (a stand-in) listens on http://127.0.0.1:${port}`));
