// bad-inputs F-3, the "done means": a 1,000-recipient campaign against the fake Cloud API, the
// server a child process killed with SIGKILL mid-campaign and started again on the same store.
// Every recipient must end `sent`; the fake must have received each recipient once, or twice
// only for recipients whose call was in flight (or not yet recorded) at the kill: those are the
// recipients re-taken after their lease expired, counted in `campaigns.resent`.
// Real time on purpose: a real process is killed mid-send and another started on its store.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startChild, type Child } from '../../../../bench/lib/child.js';
import { openStore } from '#server/store/db.js';
import { FAKE_PHONE_NUMBER_ID, FAKE_TOKEN, FAKE_WABA_ID, FakeProvider } from '#test/fakes/fake-provider.js';
import { eventually } from '#test/support/eventually.js';
import { onPostgres, openTestStore, seedDataDir } from '#test/support/store.js';

const RECIPIENTS = 1000;
const RATE = 200;
const fake = new FakeProvider({ record: true });
const dataDir = mkdtempSync(join(tmpdir(), 'campaign-crash-'));
let databaseUrl: string | undefined;
let closeDatabase: (() => Promise<void>) | undefined;
let child: Child<{ url: string; pid: number; key?: string; phone?: string }> | undefined;

beforeAll(async () => {
  await fake.start();
  if (onPostgres) {
    // A database of its own, created (and migrated) here, dropped afterwards.
    const store = await openTestStore();
    databaseUrl = store.url;
    closeDatabase = () => store.close();
  } else await seedDataDir(dataDir);
});
afterAll(async () => {
  await child?.stop();
  await fake.stop();
  await closeDatabase?.();
  rmSync(dataDir, { recursive: true, force: true });
});

const env = (extra: Record<string, string> = {}) => ({
  DATA_DIR: dataDir,
  ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
  GRAPH_API_URL: fake.baseUrl,
  SECRET_KEY: 'campaign-crash-test-secret-key-0123456789abcdef',
  FAKE_WABA_ID,
  FAKE_PHONE_NUMBER_ID,
  FAKE_TOKEN,
  // Leases expire 2 s after their last slot, so the restarted server re-takes them quickly.
  CAMPAIGN_LEASE_MS: '2000',
  ...extra,
});

const waitFor = <T>(check: () => Promise<T | false>, ms: number, what: string) => eventually(check, { within: ms, what, every: 50 });

it('F-3 kill -9 mid-campaign: resumes after restart, every recipient sent, duplicates only for calls in flight', async () => {
  child = await startChild('../campaign-server.ts', env({ SEED: '1', CONTACTS: String(RECIPIENTS), RATE: String(RATE) }));
  const { key, phone } = child.info;
  const headers = { 'x-api-key': key!, 'content-type': 'application/json' };
  const created = await fetch(`${child.info.url}/api/campaigns`, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      name: 'Crash',
      chatapp_phone_number: phone,
      audience: { type: 'all_contacts' },
      template: { name: 'bench_offer', language: 'en_US', body: [{ from_contact: 'name', fallback: 'there' }] },
    }),
  });
  expect(created.status).toBe(201);
  const campaign = (await created.json()) as { id: string };

  await waitFor(async () => fake.sent >= RECIPIENTS * 0.3, 30_000, '30 % sent');
  child.process.kill('SIGKILL');
  await new Promise((resolve) => child!.process.once('exit', resolve));
  // The killed process is the server itself (no wrapper left running on the store).
  expect(() => process.kill(child!.info.pid, 0)).toThrow();
  const sentBeforeKill = fake.sent;
  expect(sentBeforeKill).toBeLessThan(RECIPIENTS);

  child = await startChild('../campaign-server.ts', env());
  const done = await waitFor(
    async () => {
      const res = await fetch(`${child!.info.url}/api/campaigns/${campaign.id}`, { headers });
      const body = (await res.json()) as { status: string; progress: Record<string, number> };
      return body.status === 'completed' && body;
    },
    40_000,
    'completion after restart',
  );
  await child.stop();
  child = undefined;

  const perRecipient = new Map<string, number>();
  for (const r of fake.requests) if (r.path.endsWith('/messages')) perRecipient.set(r.body.to, (perRecipient.get(r.body.to) ?? 0) + 1);
  const duplicated = [...perRecipient].filter(([, n]) => n > 1).map(([phone]) => phone);
  expect(perRecipient.size).toBe(RECIPIENTS);
  expect(Math.max(...perRecipient.values())).toBeLessThanOrEqual(2);
  expect(done.progress).toMatchObject({ total: RECIPIENTS, queued: 0, sent: RECIPIENTS, failed: 0 });

  const { resent, recipients } = await withStore(async (db) => ({
    resent: (await db.selectFrom('campaigns').select('resent').where('id', '=', campaign.id).executeTakeFirstOrThrow()).resent,
    recipients: await db.selectFrom('campaign_recipients').select(['phone', 'state', 'attempts']).where('campaign_id', '=', campaign.id).execute(),
  }));
  expect(recipients.every((r) => r.state === 'sent')).toBe(true);
  // A lease counts an attempt; the fake never fails here, so a second attempt means the recipient
  // was still `sending` (called, or about to be, with no result written) when the process died.
  // (The fake sees Cloud API numbers: digits without the '+'.)
  const inFlightAtKill = new Set(recipients.filter((r) => r.attempts > 1).map((r) => (r.phone ?? '').replace(/^\+/, '')));
  expect(resent).toBe(inFlightAtKill.size);
  // Twice only where the crash fell between the provider call and our write.
  expect(duplicated.filter((phone) => !inFlightAtKill.has(phone))).toEqual([]);
  // Back-pressure keeps what is leased or unwritten to about two batches (the worker's maxBatch is 100).
  expect(inFlightAtKill.size).toBeLessThanOrEqual(RATE + 100);
  console.log(
    `F-3: ${sentBeforeKill} sends before the kill, ${inFlightAtKill.size} recipients in flight at it (re-taken), ${duplicated.length} of them sent twice`,
  );
}, 300_000); // two server processes started by tsx: a hang bound, not a speed

async function withStore<T>(read: (db: Awaited<ReturnType<typeof openStore>>['db']) => Promise<T>): Promise<T> {
  const store = await openStore(databaseUrl ? { databaseUrl } : { dataDir });
  try {
    return await read(store.db);
  } finally {
    await store.close();
  }
}
