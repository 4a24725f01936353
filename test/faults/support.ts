// Shared pieces of the fault tests: a fresh PostgreSQL database per file, server child processes
// (bench/lib/child.ts), the Login flow driven over HTTP, and the lost/duplicated report line.
import { createHmac, randomInt } from 'node:crypto';
import { startChild, type Child } from '../../bench/lib/child.js';
import { inboundPayload } from '../../bench/lib/login-push.js';
import { openTestStore } from '../support/store.js';
import { eventually } from '../support/eventually.js';

export const APP_SECRET = 'faults-provider-app-secret';
export const SECRET_KEY = 'faults-secret-key-shared-by-every-instance-0123456789';

export interface ServerInfo {
  url: string;
  pid: number;
  owner?: string;
  /** Authorization value of a Connect bearer (all scopes). */
  connect?: string;
  appId?: string;
  apiKey?: string;
  providerPhoneNumberId?: string;
  displayPhoneNumber?: string;
}
export type Server = Child<ServerInfo>;

/** A migrated database of its own; `close` drops it. */
export async function freshDatabase() {
  if (!process.env.DATABASE_URL) throw new Error('the faults project needs PostgreSQL: set DATABASE_URL (npm run test:faults)');
  const store = await openTestStore();
  return { url: store.url!, db: store.db, close: () => store.close() };
}

/** A server process on `databaseUrl` (same SECRET_KEY and provider secret for every instance). */
export function startServer(databaseUrl: string, env: Record<string, string> = {}): Promise<Server> {
  return startChild<ServerInfo>('../../test/faults/server.ts', {
    DATABASE_URL: databaseUrl,
    SECRET_KEY,
    PROVIDER_APP_SECRET: APP_SECRET,
    START_TIMEOUT_SECONDS: '150',
    ...env,
  });
}

export function kill9(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (server.process.exitCode !== null || server.process.signalCode) return resolve();
    server.process.once('exit', () => resolve());
    server.process.kill('SIGKILL');
  });
}

export async function waitFor<T>(check: () => Promise<T | false | undefined> | T | false | undefined, ms: number, what: string): Promise<T> {
  // Real processes publish nothing this one hears: their state is polled.
  return eventually(check, { within: ms, what, every: 100 }) as Promise<T>;
}

/** The figure the issue's closing note collects from every fault test. */
export function report(id: string, figures: { lost: number; duplicated: number } & Record<string, number | string>) {
  console.log(
    `${id}: ${Object.entries(figures)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')}`,
  );
}

export async function startSession(seed: ServerInfo, url = seed.url) {
  const res = await fetch(`${url}/v1/auth/chatapp/start`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': seed.apiKey! },
    body: '{}',
  });
  if (res.status !== 201) throw new Error(`start answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as { sessionId: string; subscribeToken: string; loginCode: string };
}

/** An event stream of a session, ready (subscribed) when this resolves. */
export async function openStream(url: string, session: { sessionId: string; subscribeToken: string }) {
  const controller = new AbortController();
  const res = await fetch(`${url}/v1/auth/chatapp/events/${session.sessionId}?token=${encodeURIComponent(session.subscribeToken)}`, {
    headers: { accept: 'text/event-stream' },
    signal: controller.signal,
  });
  if (res.status !== 200 || !res.body) throw new Error(`stream answered ${res.status}`);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let ended = false;
  const read = async () => {
    const { value, done } = await reader.read();
    if (done) ended = true;
    else text += decoder.decode(value);
  };
  while (!text.includes('retry:')) {
    await read();
    if (ended) throw new Error('stream closed before it was ready');
  }
  return {
    get text() {
      return text;
    },
    /** Reads until `needle` appears or the stream ends; false if it ended first or ms passed. */
    async until(needle: string, ms = 10_000): Promise<boolean> {
      const deadline = Date.now() + ms;
      while (!text.includes(needle) && !ended && Date.now() < deadline) {
        await Promise.race([read(), new Promise((r) => setTimeout(r, deadline - Date.now()))]);
      }
      return text.includes(needle);
    },
    /** Reads to the end of the stream (the server closing it); false if ms passed first. */
    async end(ms = 10_000): Promise<boolean> {
      const deadline = Date.now() + ms;
      while (!ended && Date.now() < deadline) await Promise.race([read(), new Promise((r) => setTimeout(r, deadline - Date.now()))]);
      return ended;
    },
    close: () => controller.abort(),
  };
}

/** The user's LOGIN message, as the provider's signed inbound webhook, posted to `url`. */
export async function sendLogin(url: string, seed: ServerInfo, loginCode: string, from = `4915${randomInt(100_000_000, 999_999_999)}`) {
  const body = inboundPayload({ displayPhoneNumber: seed.displayPhoneNumber!, providerPhoneNumberId: seed.providerPhoneNumberId! }, from, `LOGIN ${loginCode}`);
  const res = await fetch(`${url}/api/webhook/chatapp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-hub-signature-256': `sha256=${createHmac('sha256', APP_SECRET).update(body).digest('hex')}` },
    body,
  });
  return res.status;
}
