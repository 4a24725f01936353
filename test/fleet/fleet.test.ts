// The fleet (issue 39, docs/deploy.md): HAProxy round robin with health checks (deploy/haproxy.cfg)
// in front of three server processes on one PostgreSQL, one Redis and one S3-compatible server
// (moto), each with a DATA_DIR of its own. A mixed workload runs for FLEET_SECONDS (120): document
// uploads, and reads of every file through every live instance; Login sessions started on one
// instance, streamed on another and verified by a LOGIN delivered to a third; provider deliveries
// (inbound messages); Messaging sends of uploaded media with an Idempotency-Key; a campaign; the
// Login webhooks to a receiver. A third in, one instance is killed with SIGKILL and started again;
// two thirds in, all three are restarted one by one with SIGTERM. Then: 0 items lost (LOGINs,
// inbound messages, webhook deliveries, campaign sends, media sends), no duplicate where a wamid or
// an Idempotency-Key forbids one, every file readable on every instance, only retryable errors
// seen by clients and only while instances went away (counted and printed), and one key's accepted
// requests through the proxy within 5 % of its documented limit (RATE_LIMIT_PER_MINUTE, 600).
import { createHash, createHmac, randomInt } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '#server/lib/ids.js';
import { APP_SECRET, freshDatabase, kill9, startServer, type Server, type ServerInfo } from '../faults/support.js';
import { multipart, PNG, pdf } from '../unit/connect/content/support.js';
import { addContacts, addTemplates } from '../unit/messaging/campaigns/support.js';
import { elapse, eventually } from '../support/eventually.js';
import { freePort } from '../support/free-port.js';
import { newBucketUrl, S3_ENDPOINT, TEST_CREDENTIALS } from '../support/object-storage.js';
import { startReceiver } from '../support/receiver.js';
import { hasRedis, startRedis, type TestRedis } from '../support/redis-server.js';
import { startHaproxy } from './haproxy.js';

const SECONDS = Number(process.env.FLEET_SECONDS) || 120;
const LIMIT = 600;
const CAMPAIGN_CONTACTS = 60;
const hasHaproxy = spawnSync('haproxy', ['-v']).status === 0;
const ready = Boolean(process.env.DATABASE_URL && hasRedis && hasHaproxy && S3_ENDPOINT);
if (!ready && process.env.REQUIRE_FLEET_ENGINES === '1') throw new Error('the fleet test needs DATABASE_URL, redis-server, haproxy and STORAGE_TEST_S3');

type Phase = 'steady' | 'kill' | 'rolling';
interface Instance {
  name: string;
  port: number;
  url: string;
  server?: Server;
  up: boolean;
}

const sha = (b: Buffer | ArrayBuffer) =>
  createHash('sha256')
    .update(Buffer.from(b as ArrayBuffer))
    .digest('hex');

describe.skipIf(!ready)('a fleet of three behind HAProxy', () => {
  let database: Awaited<ReturnType<typeof freshDatabase>>;
  let redis: TestRedis;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let proxy: Awaited<ReturnType<typeof startHaproxy>>;
  let env: Record<string, string>;
  const instances: Instance[] = [];
  let seed: ServerInfo;

  async function start(i: Instance, extra: Record<string, string> = {}) {
    i.server = await startServer(database.url, { ...env, LISTEN_PORT: String(i.port), ...extra });
    i.up = true;
  }

  beforeAll(async () => {
    database = await freshDatabase();
    redis = await startRedis();
    receiver = await startReceiver();
    env = {
      REDIS_URL: redis.url,
      STORAGE_URL: await newBucketUrl('fleet'),
      AWS_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: TEST_CREDENTIALS.secretAccessKey,
      AWS_REGION: 'us-east-1',
      RATE_LIMIT_PER_MINUTE: String(LIMIT),
      RATE_LIMIT_IP_PER_MINUTE: '1000000',
      AUTH_FAILURES_PER_IP: '1000000',
      // Shorter leases and idle sleeps: work a killed instance held is taken over sooner.
      OUTBOX_LEASE_MS: '5000',
      CAMPAIGN_LEASE_MS: '5000',
      PROVIDER_INBOX_LEASE_MS: '5000',
      WORKER_IDLE_MS: '2000',
      SHUTDOWN_GRACE_MS: '10000',
      LOG_LEVEL: 'error',
    };
    for (const name of ['a', 'b', 'c']) {
      const port = await freePort();
      instances.push({ name, port, url: `http://127.0.0.1:${port}`, up: false });
    }
    await start(instances[0]!, { SEED: '1', WEBHOOK_URL: receiver.url });
    seed = instances[0]!.server!.info;
    await Promise.all(instances.slice(1).map((i) => start(i)));
    proxy = await startHaproxy(instances.map((i) => `127.0.0.1:${i.port}`) as [string, string, string]);
  });
  afterAll(async () => {
    await proxy?.stop();
    await Promise.all(instances.map((i) => i.server?.stop()));
    await redis?.stop();
    await receiver?.close();
    await database?.close();
  });

  it(`mixed workload for ${SECONDS} s with a kill -9 and a rolling restart: nothing lost, files everywhere, limits exact`, async () => {
    const db = database.db;
    const workspace = await db.selectFrom('workspaces').select('id').where('slug', '=', 'faults').executeTakeFirstOrThrow();
    const account = await db.selectFrom('business_accounts').select('id').where('workspace_id', '=', workspace.id).executeTakeFirstOrThrow();
    await addTemplates(db, { workspaceId: workspace.id, accountId: account.id });
    await addContacts(db, workspace.id, CAMPAIGN_CONTACTS, '+49152');
    // One campaign message a second: the campaign is still sending when the instance is killed.
    await db.updateTable('phone_numbers').set({ messages_per_second: 1 }).where('workspace_id', '=', workspace.id).execute();
    const owner = { authorization: seed.owner! };

    // ---- The client: every request counted; retryable failures (no answer, 502-504) retried ----
    let phase: Phase = 'steady';
    const stats = { requests: 0, retried: { steady: 0, kill: 0, rolling: 0 } as Record<Phase, number>, unexpected: [] as string[] };
    const retryableSeen: Record<string, number> = {};
    async function request(url: string, init: RequestInit & { expect: number[] }): Promise<Response | null> {
      for (let attempt = 0; attempt < 12; attempt++) {
        stats.requests++;
        let res: Response | undefined;
        let failure: string | undefined;
        try {
          res = await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) });
        } catch (error) {
          failure = String((error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name);
        }
        if (res && ![502, 503, 504].includes(res.status)) {
          if (!init.expect.includes(res.status))
            stats.unexpected.push(`${init.method ?? 'GET'} ${new URL(url).pathname} ${res.status} ${(await res.text()).slice(0, 200)}`);
          return res;
        }
        const what = failure ?? String(res!.status);
        await res?.body?.cancel();
        retryableSeen[what] = (retryableSeen[what] ?? 0) + 1;
        stats.retried[phase]++;
        await elapse(200 * (attempt + 1), 'a client backing off before its retry');
      }
      stats.unexpected.push(`${init.method ?? 'GET'} ${new URL(url).pathname}: no answer after 12 attempts`);
      return null;
    }
    const api = (path: string) => `${proxy.url}${path}`;
    const live = () => instances.filter((i) => i.up);

    // A Messaging key for the sends, made through the proxy.
    const keyRes = await request(api('/api/account/api-keys'), {
      method: 'POST',
      headers: { ...owner, 'content-type': 'application/json' },
      body: '{"name":"fleet"}',
      expect: [201],
    });
    const messagingKey = ((await keyRes!.json()) as { secret: string }).secret;
    const mk = { 'x-api-key': messagingKey };

    // ---- Items, and what each must become --------------------------------------------------
    const documents: { slug: string; sha: string }[] = [];
    const fileReads = { ok: 0, wrong: 0, instances: new Set<string>() };
    const logins: string[] = []; // sessions whose LOGIN delivery was accepted
    const verifiedOnStream = { yes: 0, cut: 0 };
    const wamids: string[] = []; // inbound messages accepted
    const sends: string[] = []; // media sends accepted (their Idempotency-Keys)
    const customers = Array.from({ length: 12 }, (_, i) => `4917${String(100000 + i).padStart(9, '0')}`);
    const wrote = new Set<string>();

    async function deliver(from: string, text: string, wamid = `wamid.fleet${newId('w').slice(2)}`): Promise<boolean> {
      const body = JSON.stringify({
        object: 'whatsapp_business_account',
        entry: [
          {
            id: '100000000000001',
            changes: [
              {
                field: 'messages',
                value: {
                  messaging_product: 'whatsapp',
                  metadata: { display_phone_number: seed.displayPhoneNumber!.replace('+', ''), phone_number_id: seed.providerPhoneNumberId },
                  contacts: [{ profile: { name: 'Fleet User' }, wa_id: from }],
                  messages: [{ from, id: wamid, timestamp: String(Math.floor(Date.now() / 1000)), type: 'text', text: { body: text } }],
                },
              },
            ],
          },
        ],
      });
      const signature = `sha256=${createHmac('sha256', APP_SECRET).update(body).digest('hex')}`;
      // Through the proxy, retried with the same wamid as the provider retries its deliveries.
      const res = await request(api('/api/webhook/chatapp'), {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature },
        body,
        expect: [200],
      });
      if (res?.status !== 200) return false;
      await res.body?.cancel();
      return true;
    }

    let running = true;
    const loops: Promise<void>[] = [];
    const loop = (name: string, pace: number, body: () => Promise<void>) =>
      loops.push(
        (async () => {
          while (running) {
            try {
              await body();
            } catch (error) {
              // An answer cut off mid-body (its instance killed or restarted): the client's retry.
              const code = String((error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message);
              if (/terminated|UND_ERR_SOCKET|ECONNRESET|other side closed|aborted/i.test(`${code} ${(error as Error).message}`)) {
                retryableSeen[`${name}: body cut`] = (retryableSeen[`${name}: body cut`] ?? 0) + 1;
                stats.retried[phase]++;
              } else stats.unexpected.push(`${name}: ${(error as Error).stack?.slice(0, 300)}`);
            }
            await elapse(pace, `${name}: the workload's pace`);
          }
        })(),
      );

    // Documents: uploaded through the proxy, then read directly from every live instance.
    async function readEverywhere(doc: { slug: string; sha: string }) {
      for (const i of live()) {
        const res = await fetch(`${i.url}/l/${doc.slug}/file`, { signal: AbortSignal.timeout(30_000) }).catch(() => null);
        if (!res || !i.up) continue; // the instance went away during the read: not a file problem
        const bytes = await res.arrayBuffer();
        if (res.status === 200 && sha(bytes) === doc.sha) {
          fileReads.ok++;
          fileReads.instances.add(i.name);
        } else if (i.up && res.status !== 503) {
          fileReads.wrong++;
          stats.unexpected.push(`file ${doc.slug} on ${i.name}: ${res.status}`);
        }
      }
    }
    loop('documents', 500, async () => {
      const bytes = pdf(1 + randomInt(5));
      const { payload, headers } = multipart({ bytes, filename: 'fleet.pdf' });
      const up = await request(api('/api/connect/documents'), {
        method: 'POST',
        headers: { authorization: seed.connect!, ...headers },
        body: new Uint8Array(payload),
        expect: [201],
      });
      if (up?.status !== 201) return;
      const doc = (await up.json()) as { id: string };
      const link = await request(api('/api/connect/links'), {
        method: 'POST',
        headers: { authorization: seed.connect!, 'content-type': 'application/json' },
        body: JSON.stringify({ document_id: doc.id, external_id: `fleet-${doc.id}`, recipient: { phone: '+4915112345678' } }),
        expect: [201],
      });
      if (link?.status !== 201) return;
      const entry = { slug: new URL(((await link.json()) as { url: string }).url).pathname.split('/').pop()!, sha: sha(bytes) };
      documents.push(entry);
      await readEverywhere(entry);
      // And an older one: every file stays readable everywhere, not only just after its upload.
      await readEverywhere(documents[randomInt(documents.length)]!);
    });

    /** A session's event stream, ready once subscribed; `verified` settles true at the event, false if the stream ends or breaks first. */
    async function verifiedStream(url: string, session: { sessionId: string; subscribeToken: string }) {
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), 15_000);
      try {
        const res = await fetch(`${url}/v1/auth/chatapp/events/${session.sessionId}?token=${encodeURIComponent(session.subscribeToken)}`, {
          headers: { accept: 'text/event-stream' },
          signal: controller.signal,
        });
        if (res.status !== 200 || !res.body) return null;
        const reader = res.body.getReader();
        const decoder = new TextDecoder();
        let text = '';
        while (!text.includes('retry:')) {
          const { value, done } = await reader.read();
          if (done) return null;
          text += decoder.decode(value);
        }
        const verified = (async () => {
          while (!text.includes('event: verified')) {
            const { value, done } = await reader.read();
            if (done) return false;
            text += decoder.decode(value);
          }
          return true;
        })().catch(() => false);
        return {
          verified,
          close: () => {
            clearTimeout(timer);
            controller.abort();
          },
        };
      } catch {
        clearTimeout(timer);
        return null;
      }
    }

    // Login: started on one instance, streamed on the next, LOGIN delivered to the third.
    let turn = 0;
    loop('login', 700, async () => {
      const [x, y, z] = [0, 1, 2].map((k) => live()[(turn + k) % live().length]!);
      turn++;
      const started = await fetch(`${x!.url}/v1/auth/chatapp/start`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': seed.apiKey! },
        body: '{}',
      }).catch(() => null);
      if (started?.status !== 201) return void (await started?.body?.cancel()); // x went away: nothing started
      const session = (await started.json()) as { sessionId: string; subscribeToken: string; loginCode: string };
      const stream = await verifiedStream(y!.url, session);
      const from = `4916${randomInt(100_000_000, 999_999_999)}`;
      const wamid = `wamid.login${newId('w').slice(2)}`;
      const payload = JSON.stringify({
        object: 'whatsapp_business_account',
        entry: [
          {
            id: '100000000000001',
            changes: [
              {
                field: 'messages',
                value: {
                  messaging_product: 'whatsapp',
                  metadata: { display_phone_number: seed.displayPhoneNumber!.replace('+', ''), phone_number_id: seed.providerPhoneNumberId },
                  contacts: [{ profile: { name: 'Fleet Login' }, wa_id: from }],
                  messages: [{ from, id: wamid, timestamp: String(Math.floor(Date.now() / 1000)), type: 'text', text: { body: `LOGIN ${session.loginCode}` } }],
                },
              },
            ],
          },
        ],
      });
      const signature = `sha256=${createHmac('sha256', APP_SECRET).update(payload).digest('hex')}`;
      const res = await fetch(`${z!.url}/api/webhook/chatapp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature },
        body: payload,
      }).catch(() => null);
      if (res?.status === 200) logins.push(session.sessionId);
      await res?.body?.cancel();
      if (stream) {
        if (res?.status === 200 && (await stream.verified)) verifiedOnStream.yes++;
        else verifiedOnStream.cut++;
        stream.close();
      }
    });

    // Provider deliveries: inbound texts from a pool of customers (which opens their window).
    loop('inbound', 300, async () => {
      const from = customers[randomInt(customers.length)]!;
      const wamid = `wamid.fleet${newId('w').slice(2)}`;
      if (await deliver(from, `hello ${wamid}`, wamid)) {
        wamids.push(wamid);
        wrote.add(from);
      }
    });

    // Sends: an image uploaded, then sent by media_id with an Idempotency-Key (retries reuse it).
    loop('sends', 800, async () => {
      const to = [...wrote][randomInt(Math.max(1, wrote.size))];
      if (!to) return;
      const form = multipart({ bytes: PNG, filename: 'photo.png', type: 'image/png', fields: { chatapp_phone_number: seed.displayPhoneNumber! } });
      const up = await request(api('/api/chatapp/media'), {
        method: 'POST',
        headers: { ...mk, ...form.headers },
        body: new Uint8Array(form.payload),
        expect: [201],
      });
      if (up?.status !== 201) return;
      const media = (await up.json()) as { id: string };
      const key = newId('idem');
      const sent = await request(api('/api/chatapp/send'), {
        method: 'POST',
        headers: { ...mk, 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify({ contact_no: `+${to}`, chatapp_phone_number: seed.displayPhoneNumber, messageType: 'image', media_id: media.id, message: key }),
        expect: [201],
      });
      if (sent?.status === 201) sends.push(key);
      await sent?.body?.cancel();
    });

    // The campaign, created through the proxy at the start.
    const created = await request(api('/api/campaigns'), {
      method: 'POST',
      headers: { ...mk, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'Fleet',
        chatapp_phone_number: seed.displayPhoneNumber,
        audience: {
          type: 'contacts',
          contact_ids: (await db.selectFrom('contacts').select('id').where('phone', 'like', '+49152%').execute()).map((r) => r.id),
        },
        template: { name: 'welcome_offer', language: 'en_US' },
      }),
      expect: [201],
    });
    const campaignId = ((await created!.json()) as { id: string }).id;

    // ---- The faults ----------------------------------------------------------------------------
    const began = Date.now();
    const at = (fraction: number) => elapse(Math.max(0, began + fraction * SECONDS * 1000 - Date.now()), 'the workload runs until the next fault');
    const progress = (what: string) => console.log(`fleet: ${((Date.now() - began) / 1000).toFixed(0)} s ${what} (${stats.requests} requests)`);
    await at(1 / 3);
    progress('kill -9 of b');
    const victim = instances[1]!;
    phase = 'kill';
    victim.up = false;
    await kill9(victim.server!);
    await start(victim);
    await eventually(() => fetch(`${proxy.url}/healthz`).then((r) => r.ok), { within: 10_000, what: 'the proxy serving' });
    phase = 'steady';
    progress('b is back');
    await at(2 / 3);
    progress('rolling restart');
    phase = 'rolling';
    for (const i of instances) {
      i.up = false;
      await i.server!.stop(); // SIGTERM: drains, exits 0
      expect(i.server!.process.exitCode).toBe(0);
      await start(i);
    }
    phase = 'steady';
    progress('all restarted');
    await at(1);
    running = false;
    await Promise.all(loops);
    progress('workload done; checking');

    // ---- What must have happened -----------------------------------------------------------------
    const within = 60_000;
    // LOGINs: every accepted one verified its session; its webhook reached the receiver.
    await eventually(
      async () =>
        logins.length > 0 &&
        (await db.selectFrom('login_sessions').select('id').where('id', 'in', logins).where('status', '=', 'success').execute()).length === logins.length,
      { within, what: 'every accepted LOGIN verified', every: 250 },
    );
    const loginsLost =
      logins.length - (await db.selectFrom('login_sessions').select('id').where('id', 'in', logins).where('status', '=', 'success').execute()).length;
    const outboxIds = (await db.selectFrom('outbox').select('event_id').execute()).map((r) => r.event_id);
    const receivedIds = () => receiver.received.map((r) => (JSON.parse(r.body) as { id: string }).id);
    await eventually(() => outboxIds.every((id) => receivedIds().includes(id)), { within, what: 'every webhook delivered', every: 250 });
    const webhooksLost = outboxIds.filter((id) => !receivedIds().includes(id)).length;
    const webhookDuplicates = receivedIds().length - new Set(receivedIds()).size;
    // Inbound: each accepted wamid stored exactly once.
    const inboundCounts = async () =>
      db
        .selectFrom('messages')
        .select(['provider_message_id', sql<string>`count(*)`.as('n')])
        .where('provider_message_id', 'in', wamids)
        .groupBy('provider_message_id')
        .execute();
    await eventually(async () => (await inboundCounts()).length === wamids.length, { within, what: 'every inbound message stored', every: 250 });
    const inbound = await inboundCounts();
    const inboundDuplicates = inbound.filter((r) => Number(r.n) > 1).length;
    // Sends: each accepted Idempotency-Key is one message.
    const sentMessages = await db
      .selectFrom('messages')
      .select(sql<string>`content->>'caption'`.as('caption'))
      .where('direction', '=', 'outbound')
      .where('type', '=', 'image')
      .execute();
    const sendsLost = sends.filter((k) => !sentMessages.some((m) => m.caption === k)).length;
    const sendDuplicates = sends.filter((k) => sentMessages.filter((m) => m.caption === k).length > 1).length;
    // The campaign: completed, each recipient sent once.
    await eventually(
      async () => (await db.selectFrom('campaigns').select('status').where('id', '=', campaignId).executeTakeFirstOrThrow()).status === 'completed',
      { within: 120_000, what: 'the campaign completed', every: 500 },
    );
    const perContact = await db
      .selectFrom('messages')
      .select(['contact_id', sql<string>`count(*)`.as('n')])
      .where('campaign_id', '=', campaignId)
      .groupBy('contact_id')
      .execute();
    const campaignLost = CAMPAIGN_CONTACTS - perContact.length;
    const campaignDuplicates = perContact.filter((r) => Number(r.n) > 1).length;
    // Files: every document readable on every instance, now that all three are back.
    const before = fileReads.wrong;
    for (const doc of documents) await readEverywhere(doc);
    const filesUnreadable = fileReads.wrong - before;

    // One key's accepted requests across the fleet against the documented limit.
    const probe = await request(api('/api/account/api-keys'), {
      method: 'POST',
      headers: { ...owner, 'content-type': 'application/json' },
      body: '{"name":"limit"}',
      expect: [201],
    });
    const probeKey = ((await probe!.json()) as { secret: string }).secret;
    const statuses: number[] = [];
    let fired = 0;
    const fire = async () => {
      while (fired++ < LIMIT + 100) {
        const res = await fetch(api('/api/chatapp/connections'), { headers: { 'x-api-key': probeKey } });
        statuses.push(res.status);
        await res.body?.cancel();
      }
    };
    await Promise.all(Array.from({ length: 8 }, fire));
    const accepted = statuses.filter((s) => s === 200).length;

    const figures = {
      seconds: SECONDS,
      requests: stats.requests,
      kills: 1,
      sigterm_restarts: 3,
      retried_during_kill: stats.retried.kill,
      retried_during_rolling: stats.retried.rolling,
      retried_steady: stats.retried.steady,
      retryable_seen: JSON.stringify(retryableSeen),
      unexpected_errors: stats.unexpected.length,
      documents: documents.length,
      file_reads: fileReads.ok,
      files_unreadable: filesUnreadable + before,
      logins: logins.length,
      logins_lost: loginsLost,
      logins_verified_on_stream: verifiedOnStream.yes,
      streams_cut: verifiedOnStream.cut,
      inbound: wamids.length,
      inbound_duplicates: inboundDuplicates,
      media_sends: sends.length,
      sends_lost: sendsLost,
      send_duplicates: sendDuplicates,
      campaign_recipients: perContact.length,
      campaign_lost: campaignLost,
      campaign_duplicates: campaignDuplicates,
      webhooks: outboxIds.length,
      webhooks_lost: webhooksLost,
      webhook_duplicates: webhookDuplicates,
      limit: LIMIT,
      limit_accepted: accepted,
      limit_error_pct: ((Math.abs(accepted - LIMIT) / LIMIT) * 100).toFixed(1),
    };
    console.log(
      `fleet: ${Object.entries(figures)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ')}`,
    );
    if (stats.unexpected.length) console.log(stats.unexpected.slice(0, 20).join('\n'));

    expect(stats.unexpected).toEqual([]);
    expect(stats.retried.steady).toBe(0);
    expect(fileReads.instances.size).toBe(3);
    expect({ loginsLost, filesUnreadable, campaignLost, campaignDuplicates, sendsLost, sendDuplicates, inboundDuplicates, webhooksLost }).toEqual({
      loginsLost: 0,
      filesUnreadable: 0,
      campaignLost: 0,
      campaignDuplicates: 0,
      sendsLost: 0,
      sendDuplicates: 0,
      inboundDuplicates: 0,
      webhooksLost: 0,
    });
    expect(documents.length).toBeGreaterThan(0);
    expect(sends.length).toBeGreaterThan(0);
    expect(Math.abs(accepted - LIMIT)).toBeLessThanOrEqual(LIMIT * 0.05);
  });
});
