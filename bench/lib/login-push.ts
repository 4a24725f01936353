// Login push latency: from the inbound provider webhook POST (the user's LOGIN message) to the
// `verified` event read by an SSE client, one session at a time. The stream may be held by
// another instance than the one receiving the webhook (cross-instance fan-out via NOTIFY).
// The first `warmup` sessions run the same way and are not counted: in a fresh server they are
// the ones that compile the path (the first took 66 ms, the next twenty 13–23 ms, in one run).
import { createHmac, randomInt } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { median } from './load.js';

export interface LoginTarget {
  /** Instance that receives start and the provider webhook. */
  entryUrl: string;
  /** Instance that holds the SSE stream. */
  streamUrl: string;
  apiKey: string;
  providerPhoneNumberId: string;
  displayPhoneNumber: string;
  appSecret: string;
}

export async function openStream(url: string) {
  const res = await fetch(url, { headers: { accept: 'text/event-stream' } });
  if (res.status !== 200 || !res.body) throw new Error(`stream answered ${res.status}`);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  // The server writes `retry:` once it is subscribed: only then is the stream ready.
  while (!buffer.includes('retry:')) {
    const { value, done } = await reader.read();
    if (done) throw new Error('stream closed before it was ready');
    buffer += decoder.decode(value);
  }
  return {
    /** When `event` was read (performance.now()); the stream is then closed, outside that time. */
    async until(event: string): Promise<number> {
      while (!buffer.includes(`event: ${event}`)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`stream closed before ${event}`);
        buffer += decoder.decode(value);
      }
      const at = performance.now();
      await reader.cancel();
      return at;
    },
  };
}

/** A text message from `from` to a number, as the provider's inbound webhook carries it (unsigned). */
export function inboundPayload(to: { displayPhoneNumber: string; providerPhoneNumberId: string }, from: string, text: string) {
  return JSON.stringify({
    object: 'whatsapp_business_account',
    entry: [
      {
        id: '100000000000001',
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: to.displayPhoneNumber.replace('+', ''), phone_number_id: to.providerPhoneNumberId },
              contacts: [{ profile: { name: 'Bench User' }, wa_id: from }],
              messages: [
                {
                  from,
                  id: `wamid.bench${randomInt(1e12)}${Date.now()}`,
                  timestamp: String(Math.floor(Date.now() / 1000)),
                  type: 'text',
                  text: { body: text },
                },
              ],
            },
          },
        ],
      },
    ],
  });
}

async function signIn(target: LoginTarget, i: number): Promise<number> {
  const start = await fetch(`${target.entryUrl}/v1/auth/chatapp/start`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': target.apiKey },
    body: '{}',
  });
  if (start.status !== 201) throw new Error(`start answered ${start.status}: ${await start.text()}`);
  const { sessionId, subscribeToken, loginCode } = await start.json();
  const stream = await openStream(`${target.streamUrl}/v1/auth/chatapp/events/${sessionId}?token=${encodeURIComponent(subscribeToken)}`);
  const body = inboundPayload(target, `4915${String(100000000 + i).slice(-9)}`, `LOGIN ${loginCode}`);
  const t0 = performance.now();
  const verified = stream.until('verified');
  const hook = await fetch(`${target.entryUrl}/api/webhook/chatapp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-hub-signature-256': `sha256=${createHmac('sha256', target.appSecret).update(body).digest('hex')}` },
    body,
  });
  if (hook.status !== 200) throw new Error(`webhook answered ${hook.status}`);
  // Read to the end, as a provider does: an unread body keeps fetch from reusing its connection.
  await hook.arrayBuffer();
  return (await verified) - t0;
}

/** `runs` runs of `sessions` sign-ins after `warmup` uncounted ones; p50, p99 and max are the medians of the runs'. */
export async function measureLoginPush(target: LoginTarget, sessions: number, warmup: number, runs: number) {
  let i = 0;
  while (i < warmup) await signIn(target, i++);
  const perRun: { p50: number; p99: number; max: number }[] = [];
  for (let r = 0; r < runs; r++) {
    const samples: number[] = [];
    for (let n = 0; n < sessions; n++) samples.push(await signIn(target, i++));
    const sorted = [...samples].sort((a, b) => a - b);
    perRun.push({ p50: median(samples), p99: sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)]!, max: sorted[sorted.length - 1]! });
  }
  const of = (k: 'p50' | 'p99' | 'max') => median(perRun.map((run) => run[k]));
  return { sessions, warmup, runs: perRun, p50: of('p50'), p99: of('p99'), max: of('max') };
}
