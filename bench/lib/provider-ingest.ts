// Signed provider deliveries accepted and stored per second from one client address (127.0.0.1),
// against the server's per-IP limit as shipped: bursts of inbound text messages in Meta's own
// published shape (test/fakes/meta-webhook-examples.ts), each with its own wamid and one of 500
// senders, signed with X-Hub-Signature-256 as the provider signs them. Every answer is counted
// by status. A 200 means the delivery is durably stored (processed, or in the server's inbox):
// after the bursts the run waits for the inbox to drain, then counts the messages the server
// stored against those sent, and reports the processing rate and drain time apart from the rate
// of acknowledgements.
import type { EventEmitter } from 'node:events';
import autocannon from 'autocannon';
import { sha256Header } from '#server/lib/signatures.js';
import { metaTextDelivery } from '#test/fakes/meta-webhook-examples.js';
import { startChild } from './child.js';
import { median } from './load.js';

interface Info {
  url: string;
  providerPnId: string;
  number: string;
}

/** `env` may name a PostgreSQL database (DATABASE_URL); the embedded store otherwise. */
export async function measureProviderIngest(deliveries: number, rounds: number, appSecret: string, env: Record<string, string> = {}) {
  const server = await startChild<Info>('provider-webhook.ts', { ...env, PROVIDER_APP_SECRET: appSecret });
  const lines: string[] = [];
  server.process.stdout!.on('data', (chunk) => lines.push(...String(chunk).split('\n')));
  const statuses: Record<string, number> = {};
  const bursts: { deliveries: number; seconds: number; perSecond: number }[] = [];
  let sent = 0;
  let errors = 0;
  try {
    const startedAt = performance.now();
    // One burst of 200 first: warm-up, excluded from the rate (but counted in sent and stored).
    for (let round = -1; round < rounds; round++) {
      const amount = round < 0 ? 200 : deliveries;
      const t0 = performance.now();
      // Timed to the last answer: autocannon resolves on its next one-second sampling tick after
      // the last one, which would round every burst up to whole seconds.
      let lastAnswer = t0;
      const job = autocannon({
        url: `${server.info.url}/api/webhook/chatapp`,
        method: 'POST',
        connections: 10,
        pipelining: 1,
        amount,
        headers: { 'content-type': 'application/json' },
        requests: [
          {
            setupRequest: (req: autocannon.Request) => {
              const n = sent++;
              const body = JSON.stringify(metaTextDelivery(server.info, `wamid.bench.${n}`, Date.now(), `1650555${String(n % 500).padStart(4, '0')}`));
              return { ...req, body, headers: { ...req.headers, 'x-hub-signature-256': sha256Header(appSecret, body) } };
            },
          },
        ],
      });
      // Without a callback autocannon returns its tracker, an EventEmitter that is also a promise.
      (job as unknown as EventEmitter).on('response', () => (lastAnswer = performance.now()));
      const result = await job;
      const seconds = (lastAnswer - t0) / 1000;
      errors += result.errors + result.timeouts;
      for (const [code, stat] of Object.entries(result.statusCodeStats ?? {})) statuses[code] = (statuses[code] ?? 0) + (stat?.count ?? 0);
      if (round >= 0) bursts.push({ deliveries: amount, seconds, perSecond: amount / seconds });
    }
    // Acknowledged means durably stored; processing may still be under way. Wait until the inbox
    // is empty (with a deadline), then count the messages against those sent.
    const acknowledgedAt = performance.now();
    const deadline = Math.max(60_000, sent * 20);
    let count: Count;
    for (;;) {
      count = await askCount(server.process.stdin!, lines);
      if (count.pending === 0 || performance.now() - acknowledgedAt > deadline) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const drainedAt = performance.now();
    const answered = Object.values(statuses).reduce((a, b) => a + b, 0);
    return {
      perSecond: median(bursts.map((b) => b.perSecond)),
      bursts,
      sent,
      answered,
      stored: count.stored,
      lost: sent - count.stored,
      pendingAtDeadline: count.pending,
      poison: count.failed,
      answers429: statuses['429'] ?? 0,
      statuses,
      errors,
      // Processing capacity, apart from acknowledgement: from the first delivery sent to the inbox
      // drained, and the drain after the last acknowledgement.
      processedPerSecond: count.stored / ((drainedAt - startedAt) / 1000),
      drainSeconds: (drainedAt - acknowledgedAt) / 1000,
    };
  } finally {
    await server.stop();
  }
}

interface Count {
  stored: number;
  pending: number;
  failed: number;
}

async function askCount(stdin: NodeJS.WritableStream, lines: string[]): Promise<Count> {
  const from = lines.length;
  stdin.write('count\n');
  const end = Date.now() + 60_000;
  for (;;) {
    const line = lines.slice(from).find((l) => l.startsWith('{"stored":'));
    if (line) return JSON.parse(line) as Count;
    if (Date.now() > end) throw new Error('the benchmark server did not answer `count`');
    await new Promise((r) => setTimeout(r, 5));
  }
}
