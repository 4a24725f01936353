// The campaign benchmark: one campaign to `recipients` contacts from a server child process
// whose Cloud API adapter talks to the fake provider in this process. Reports the achieved send
// rate (steady state, from the first to the last send the fake received) against the number's
// configured rate, the most sends the fake received in any second, the time to materialise the
// audience, and the child's memory (RSS) before and at its peak while sending.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { FakeProvider, FAKE_PHONE_NUMBER_ID, FAKE_TOKEN, FAKE_WABA_ID } from '#test/fakes/fake-provider.js';
import { maxInWindow } from '#test/support/max-in-window.js';
import { startChild } from './child.js';
import { rssBytes } from './sse-memory.js';

export interface CampaignFigures {
  recipients: number;
  configuredPerSecond: number;
  achievedPerSecond: number;
  createMs: number;
  sendSeconds: number;
  /** The most sends the fake received in any sliding second; above the configured rate when calls paced in time arrive bunched. */
  maxSendsInAnySecond: number;
  rssBeforeBytes: number;
  rssPeakBytes: number;
}

type Info = { url: string; pid: number; key: string; phone: string };

/** A fresh database on the PostgreSQL server `adminUrl`: its URL, and how to drop it. */
export async function createBenchDatabase(adminUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `bench_${Date.now()}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      await admin.query(`drop database if exists ${name} with (force)`);
      await admin.end();
    },
  };
}

/** Runs `fn` with a fresh database on the PostgreSQL server `adminUrl`, dropped afterwards. */
export async function withBenchDatabase<T>(adminUrl: string, fn: (url: string) => Promise<T>): Promise<T> {
  const database = await createBenchDatabase(adminUrl);
  try {
    return await fn(database.url);
  } finally {
    await database.drop();
  }
}

/** `env` may name DATABASE_URL; otherwise the child runs on PGlite in a temporary DATA_DIR. */
export async function measureCampaign(recipients: number, ratePerSecond: number, env: Record<string, string> = {}): Promise<CampaignFigures> {
  const dataDir = env.DATABASE_URL ? undefined : mkdtempSync(join(tmpdir(), 'bench-campaign-'));
  const fake = new FakeProvider({ record: false });
  await fake.start();
  const child = await startChild<Info>('../campaign-server.ts', {
    ...(dataDir ? { DATA_DIR: dataDir } : {}),
    ...env,
    SEED: '1',
    CONTACTS: String(recipients),
    RATE: String(ratePerSecond),
    GRAPH_API_URL: fake.baseUrl,
    SECRET_KEY: 'campaign-bench-secret-key-0123456789abcdef',
    FAKE_WABA_ID,
    FAKE_PHONE_NUMBER_ID,
    FAKE_TOKEN,
  });
  try {
    const { url, pid, key, phone } = child.info;
    const rssBeforeBytes = rssBytes(pid);
    let rssPeakBytes = rssBeforeBytes;
    const sampler = setInterval(() => (rssPeakBytes = Math.max(rssPeakBytes, rssBytes(pid))), 200);
    const headers = { 'x-api-key': key, 'content-type': 'application/json' };
    const createdAt = Date.now();
    const created = await fetch(`${url}/api/campaigns`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        name: 'Bench',
        chatapp_phone_number: phone,
        rate_per_second: ratePerSecond,
        audience: { type: 'all_contacts' },
        template: { name: 'bench_offer', language: 'en_US', body: [{ from_contact: 'name', fallback: 'there' }] },
      }),
    });
    // Over CAMPAIGN_PREPARE_IN_REQUEST recipients the campaign answers 202 `preparing` and a job
    // writes its recipients; it starts on its own when they are written.
    if (created.status !== 201 && created.status !== 202) throw new Error(`campaign not created: ${created.status} ${await created.text()}`);
    const createMs = Date.now() - createdAt;
    const { id } = (await created.json()) as { id: string };
    let first = 0;
    let last = 0;
    const deadline = Date.now() + Math.max(120_000, (recipients / ratePerSecond) * 3000);
    for (;;) {
      if (!first && fake.sent > 0) first = Date.now();
      if (fake.sent >= recipients) {
        last = Date.now();
        break;
      }
      if (Date.now() > deadline) throw new Error(`only ${fake.sent} of ${recipients} sent in time`);
      await new Promise((r) => setTimeout(r, 20));
    }
    clearInterval(sampler);
    // The campaign must also finish in the store (every result written), not just reach the fake.
    for (;;) {
      const res = await fetch(`${url}/api/campaigns/${id}`, { headers });
      const body = (await res.json()) as { status: string; progress: { sent: number } };
      if (body.status === 'completed') {
        if (body.progress.sent !== recipients) throw new Error(`completed with ${body.progress.sent} sent of ${recipients}`);
        break;
      }
      if (Date.now() > deadline) throw new Error(`campaign ${body.status} after every send`);
      await new Promise((r) => setTimeout(r, 100));
    }
    if (fake.sent !== recipients) throw new Error(`the fake received ${fake.sent} sends for ${recipients} recipients`);
    const sendSeconds = (last - first) / 1000;
    // n sends span n - 1 intervals.
    return {
      recipients,
      configuredPerSecond: ratePerSecond,
      achievedPerSecond: (recipients - 1) / sendSeconds,
      createMs,
      sendSeconds,
      maxSendsInAnySecond: maxInWindow(fake.sendTimes),
      rssBeforeBytes,
      rssPeakBytes,
    };
  } finally {
    await child.stop();
    await fake.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }
}
