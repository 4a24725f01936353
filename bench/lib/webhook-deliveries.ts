// Signed webhook deliveries per second, from the outbox to a receiver on 127.0.0.1: a burst of
// events committed at once, timed from the commit to the last delivery received. The receiver
// verifies every signature with our client helper (as a customer would) and counts duplicates.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyConnectWebhook } from '../../clients/webhooks.js';
import { startChild } from './child.js';
import { median } from './load.js';

interface Burst {
  events: number;
  seconds: number;
  perSecond: number;
}

export async function measureWebhookDeliveries(events: number, rounds: number, env: Record<string, string> = {}) {
  let secret = '';
  const seen = new Set<string>();
  let duplicates = 0;
  let badSignatures = 0;
  let onDelivery = () => {};
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      try {
        const event = verifyConnectWebhook(Buffer.concat(chunks), req.headers['x-connect-signature'], secret);
        if (seen.has(event.id)) duplicates++;
        else seen.add(event.id);
      } catch {
        badSignatures++;
      }
      res.writeHead(200).end();
      onDelivery();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
  const server = await startChild<{ url: string; secret: string }>('webhooks.ts', { ...env, RECEIVER_URL: receiverUrl });
  secret = server.info.secret;
  const lines: string[] = [];
  server.process.stdout!.on('data', (chunk) => lines.push(...String(chunk).split('\n')));
  const bursts: Burst[] = [];
  try {
    // One small burst first: warm-up, excluded.
    for (let round = -1; round < rounds; round++) {
      const size = round < 0 ? Math.min(200, events) : events;
      const target = seen.size + size;
      const done = new Promise<void>((resolve) => (onDelivery = () => seen.size >= target && resolve()));
      server.process.stdin!.write(`emit ${size}\n`);
      await until(() => lines.some((l) => l === `{"emitted":${size}}`), 120_000, 'the events to commit');
      lines.length = 0;
      const t0 = performance.now();
      // The guard is cleared once the burst is in: left pending, it kept the bench process alive
      // for five minutes after its last figure.
      let guard: NodeJS.Timeout | undefined;
      await Promise.race([
        done,
        new Promise((_, reject) => (guard = setTimeout(() => reject(new Error(`only ${seen.size} of ${target} deliveries within 300 s`)), 300_000))),
      ]).finally(() => clearTimeout(guard));
      const seconds = (performance.now() - t0) / 1000;
      if (round >= 0) bursts.push({ events: size, seconds, perSecond: size / seconds });
    }
  } finally {
    await server.stop();
    receiver.close();
  }
  if (duplicates || badSignatures) throw new Error(`${duplicates} duplicate deliveries and ${badSignatures} bad signatures`);
  return { perSecond: median(bursts.map((b) => b.perSecond)), bursts, delivered: seen.size, duplicates, badSignatures };
}

async function until(ok: () => boolean, ms: number, what: string) {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
