// The provider inbox at provider speed: a backlog of a campaign's statuses (one status delivery
// per message, `messages` of them, handed to the inbox at once as the webhook hands over a burst)
// is processed by the server's own worker, timed from the first handed over to the inbox drained
// and every message at the new status. Behind that backlog, a user's LOGIN arrives through the signed
// webhook; its time from the POST to the `verified` event on the sign-in's SSE stream says whether
// sign-ins queue behind bulk traffic. Rounds take the messages to sent, delivered, read in turn.
import { createHmac } from 'node:crypto';
import type { Readable, Writable } from 'node:stream';
import { startChild } from './child.js';
import { inboundPayload, openStream } from './login-push.js';
import { median } from './load.js';

interface Info {
  url: string;
  messages: number;
  apiKey: string;
  providerPhoneNumberId: string;
  displayPhoneNumber: string;
}

const STATUSES = ['sent', 'delivered', 'read'] as const;

export interface InboxRound {
  status: string;
  deliveries: number;
  /** From the first delivery handed to the inbox to the inbox drained. */
  seconds: number;
  storedMs: number;
  perSecond: number;
  loginMs: number;
  /** Deliveries still waiting when the LOGIN was verified, and what the inbox had done then. */
  pendingAtLogin: number;
  inboxAtLogin: Record<string, number>;
  /** The LOGIN's message notification: ms after the backlog was stored, and deliveries processed by then. */
  receivedAtLogin?: { ms: number; processed: number };
  failed: number;
  applied: number;
}

/** `env` may name a PostgreSQL database (DATABASE_URL); the embedded store otherwise. Up to three rounds. */
export async function measureProviderInbox(messages: number, rounds: number, appSecret: string, env: Record<string, string> = {}) {
  const server = await startChild<Info>('provider-inbox.ts', { ...env, MESSAGES: String(messages), PROVIDER_APP_SECRET: appSecret });
  const ask = reader(server.process.stdout!, server.process.stdin!);
  const runs: InboxRound[] = [];
  try {
    for (const status of STATUSES.slice(0, Math.min(3, rounds))) {
      // The sign-in is started and its stream open before the backlog, so only the LOGIN is timed.
      const start = await fetch(`${server.info.url}/v1/auth/chatapp/start`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': server.info.apiKey },
        body: '{}',
      });
      if (start.status !== 201) throw new Error(`start answered ${start.status}: ${await start.text()}`);
      const { sessionId, subscribeToken, loginCode } = await start.json();
      const stream = await openStream(`${server.info.url}/v1/auth/chatapp/events/${sessionId}?token=${encodeURIComponent(subscribeToken)}`);

      const sentAt = performance.now();
      const stored = await ask<{ backlog: number; storedMs: number }>(`backlog ${status}`, '{"backlog":');
      const t0 = performance.now();
      const body = inboundPayload(server.info, `4916${String(100000000 + runs.length).slice(-9)}`, `LOGIN ${loginCode}`);
      const verified = stream.until('verified');
      const hook = await fetch(`${server.info.url}/api/webhook/chatapp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-hub-signature-256': `sha256=${createHmac('sha256', appSecret).update(body).digest('hex')}` },
        body,
      });
      if (hook.status !== 200) throw new Error(`webhook answered ${hook.status}`);
      await hook.arrayBuffer();
      const loginMs = (await verified) - t0;
      const afterLogin = await ask<{ pending: number; inbox: Record<string, number>; received?: { ms: number; processed: number } }>(
        `count ${status}`,
        '{"pending":',
      );

      const deadline = performance.now() + Math.max(120_000, stored.backlog * 20);
      let count: { pending: number; failed: number; applied: number };
      for (;;) {
        count = await ask(`count ${status}`, '{"pending":');
        if (count.pending === 0 || performance.now() > deadline) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      // From the first delivery handed over (some are processed while the rest are stored).
      const seconds = (performance.now() - sentAt) / 1000;
      runs.push({
        status,
        deliveries: stored.backlog,
        seconds,
        perSecond: count.applied / seconds,
        storedMs: stored.storedMs,
        loginMs,
        pendingAtLogin: afterLogin.pending,
        inboxAtLogin: afterLogin.inbox,
        receivedAtLogin: afterLogin.received,
        failed: count.failed,
        applied: count.applied,
      });
    }
    const lost = runs.reduce((n, r) => n + (r.deliveries - r.applied), 0);
    return {
      messages,
      runs,
      perSecond: median(runs.map((r) => r.perSecond)),
      loginMs: median(runs.map((r) => r.loginMs)),
      loginMaxMs: Math.max(...runs.map((r) => r.loginMs)),
      lost,
      poison: runs.reduce((n, r) => n + r.failed, 0),
    };
  } finally {
    await server.stop();
  }
}

/** Sends a command line to the server and resolves with the first JSON line starting with `prefix` after it. */
function reader(stdout: Readable, stdin: Writable) {
  const lines: string[] = [];
  let partial = '';
  stdout.on('data', (chunk) => {
    const parts = (partial + String(chunk)).split('\n');
    partial = parts.pop()!;
    lines.push(...parts);
  });
  return async <T>(command: string, prefix: string): Promise<T> => {
    const from = lines.length;
    stdin.write(`${command}\n`);
    const end = Date.now() + 300_000;
    for (;;) {
      const line = lines.slice(from).find((l) => l.startsWith(prefix));
      if (line) return JSON.parse(line) as T;
      if (Date.now() > end) throw new Error(`the benchmark server did not answer \`${command}\``);
      await new Promise((r) => setTimeout(r, 5));
    }
  };
}
