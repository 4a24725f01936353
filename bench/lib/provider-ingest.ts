// Signed provider deliveries accepted and stored per second from one client address (127.0.0.1),
// against the server's per-IP limit as shipped: bursts of inbound text messages in Meta's own
// published shape (test/fakes/meta-webhook-examples.ts), each with its own wamid and one of 500
// senders, signed with X-Hub-Signature-256 as the provider signs them. Every answer is counted
// by status, and the messages the server stored are counted against those sent.
import autocannon from 'autocannon';
import { sha256Header } from '../../server/lib/signatures.js';
import { metaTextDelivery } from '../../test/fakes/meta-webhook-examples.js';
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
    // One burst of 200 first: warm-up, excluded from the rate (but counted in sent and stored).
    for (let round = -1; round < rounds; round++) {
      const amount = round < 0 ? 200 : deliveries;
      const t0 = performance.now();
      const result = await autocannon({
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
      const seconds = (performance.now() - t0) / 1000;
      errors += result.errors + result.timeouts;
      for (const [code, stat] of Object.entries(result.statusCodeStats ?? {})) statuses[code] = (statuses[code] ?? 0) + (stat?.count ?? 0);
      if (round >= 0) bursts.push({ deliveries: amount, seconds, perSecond: amount / seconds });
    }
    server.process.stdin!.write('count\n');
    const stored = await until(() => lines.find((l) => l.startsWith('{"stored":')), 60_000);
    const storedCount = JSON.parse(stored).stored as number;
    const answered = Object.values(statuses).reduce((a, b) => a + b, 0);
    return {
      perSecond: median(bursts.map((b) => b.perSecond)),
      bursts,
      sent,
      answered,
      stored: storedCount,
      lost: sent - storedCount,
      answers429: statuses['429'] ?? 0,
      statuses,
      errors,
    };
  } finally {
    await server.stop();
  }
}

async function until<T>(get: () => T | undefined, ms: number): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = get();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error('the benchmark server did not answer `count`');
    await new Promise((r) => setTimeout(r, 5));
  }
}
