// The webhooks settings page: Connect and Messaging endpoints created with the secret shown
// once (bad-inputs L1), forged posts refused (bad-inputs C15), another workspace's endpoint and delivery ids answering
// 404 with nothing changed (bad-inputs B1), enable/disable, rotate, delete with confirmation, a test event
// delivered to a local receiver, its delivery log with the attempt, and redelivery (a new attempt).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { emitEvent } from '#server/apis/webhooks/emit.js';
import { startReceiver } from '#test/support/receiver.js';
import { appWithClock, pump } from '../webhooks/support.js';
import { forgedPosts, signedInBrowser, type Browser } from './settings-support.js';

const PAGE = '/account/webhooks';
const SECRET = /whsec_[0-9A-Za-z]{20,}/;

let app: FastifyInstance;
let a: Browser;
let b: Browser;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
beforeAll(async () => {
  ({ app } = await appWithClock());
  a = await signedInBrowser(app);
  b = await signedInBrowser(app);
  receiver = await startReceiver(() => 200);
  await app.platform.outbox.stop(); // attempts only when a test runs a batch
});
afterAll(() => receiver.close());

const endpointsOf = (browser: Browser) =>
  app.platform.store.db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('workspace_id', '=', browser.owner.workspace.id)
    .orderBy('created_at', 'desc')
    .execute();
const attemptsOf = (endpointId: string) =>
  app.platform.store.db
    .selectFrom('delivery_attempts')
    .innerJoin('outbox', 'outbox.id', 'delivery_attempts.outbox_id')
    .select(['outbox.id', 'delivery_attempts.status_code'])
    .where('outbox.endpoint_id', '=', endpointId)
    .execute();

async function createConnect(browser: Browser, events: string[] = ['*']) {
  const res = await browser.submit(`${PAGE}/connect`, { api: 'connect', url: receiver.url, enabled_events: events, description: 'page endpoint' });
  expect(res.statusCode, res.body).toBe(200);
  const [row] = await endpointsOf(browser);
  return { res, row: row! };
}

describe('webhooks settings page', () => {
  it('L1 Connect create: the signing secret is in that answer only (and is the stored one); the list shows its prefix', async () => {
    const { res, row } = await createConnect(a);
    const secret = SECRET.exec(res.body)![0];
    expect(app.platform.secrets.decrypt(row.secret_enc)).toBe(secret);
    expect(res.headers['cache-control']).toBe('no-store');
    const later = await a.open(PAGE);
    expect(later.body).not.toContain(secret);
    expect(later.body).toContain(row.secret_prefix);
    expect(later.body).toContain(`${PAGE}/connect/${row.id}`);
  });

  it('L1 Messaging create and rotate: each secret shown once; the old one keeps signing for a day', async () => {
    const res = await a.submit(`${PAGE}/messaging`, { api: 'messaging', url: receiver.url, enabled_events: ['message.received', 'campaign.completed'] });
    expect(res.statusCode, res.body).toBe(200);
    const [row] = (await endpointsOf(a)).filter((e) => e.api === 'messaging');
    expect(app.platform.secrets.decrypt(row!.secret_enc)).toBe(SECRET.exec(res.body)![0]);
    const rotated = await a.submit(`${PAGE}/messaging/${row!.id}/rotate-secret`);
    expect(rotated.statusCode).toBe(200);
    const after = (await endpointsOf(a)).find((e) => e.id === row!.id)!;
    expect(app.platform.secrets.decrypt(after.secret_enc)).toBe(SECRET.exec(rotated.body)![0]);
    expect(after.previous_secret_enc).toBe(row!.secret_enc);
    expect((await a.open(PAGE)).body).not.toMatch(SECRET);
  });

  it("a refused create (unsafe or malformed URL, event of the other API) keeps the form with the API's reason", async () => {
    const before = (await endpointsOf(a)).length;
    const bad = await a.submit(`${PAGE}/connect`, { api: 'connect', url: 'ftp://example.com/x', enabled_events: 'link.opened' });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain('value="ftp://example.com/x"');
    const other = await a.submit(`${PAGE}/connect`, { api: 'connect', url: receiver.url, enabled_events: 'message.received' });
    expect(other.statusCode).toBe(400);
    expect(other.body).toContain('message.received is not an event type of this API');
    const none = await a.submit(`${PAGE}/messaging`, { api: 'messaging', url: receiver.url });
    expect(none.statusCode).toBe(400);
    expect((await endpointsOf(a)).length).toBe(before);
  });

  it('J3 a description like <script> is escaped', async () => {
    await a.submit(`${PAGE}/connect`, { api: 'connect', url: receiver.url, enabled_events: '*', description: '<script>alert(1)</script>' });
    const res = await a.open(PAGE);
    expect(res.body).not.toContain('<script>');
    expect(res.body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
  });

  it('C15 create, disable and delete without the CSRF token or from another origin: 403, nothing changed', async () => {
    const before = await endpointsOf(a);
    const id = before[0]!.id;
    for (const res of await forgedPosts(app, a, `${PAGE}/connect`, { api: 'connect', url: receiver.url, enabled_events: '*' }))
      expect(res.statusCode).toBe(403);
    for (const res of await forgedPosts(app, a, `${PAGE}/connect/${id}/disable`)) expect(res.statusCode).toBe(403);
    for (const res of await forgedPosts(app, a, `${PAGE}/connect/${id}/delete`, { confirm: 'yes' })) expect(res.statusCode).toBe(403);
    expect(await endpointsOf(a)).toEqual(before);
  });

  it('test event -> delivery log shows the attempt (status, code, duration, answer); redeliver makes a new attempt', async () => {
    const { row } = await createConnect(a, ['link.opened']);
    const sent = await a.submit(`${PAGE}/connect/${row.id}/test`);
    expect(sent.statusCode).toBe(303);
    expect(sent.headers.location).toBe(`${PAGE}/connect/${row.id}`);
    await pump(app, async () => (await attemptsOf(row.id)).length === 1, 'the test delivery');
    const log = await a.open(`${PAGE}/connect/${row.id}`);
    expect(log.statusCode).toBe(200);
    expect(log.body).toContain('webhook_endpoint.test');
    expect(log.body).toContain('succeeded');
    expect(log.body).toMatch(
      /<td data-label="Response">200<\/td><td data-label="Duration">\d+ ms<\/td><td data-label="Answer \(first bytes\)"><code>ok<\/code>/,
    );
    const [delivery] = await attemptsOf(row.id);
    const again = await a.submit(`${PAGE}/connect/${row.id}/deliveries/${delivery!.id}/redeliver`);
    expect(again.statusCode).toBe(303);
    await pump(app, async () => (await attemptsOf(row.id)).length === 2, 'the redelivery');
    const after = await a.open(`${PAGE}/connect/${row.id}`);
    expect(after.body).toContain(`redelivery of <code>${delivery!.id}</code>`);
    expect(receiver.received.filter((r) => r.body.includes(row.id))).toHaveLength(2);
  });

  it("disable and enable the endpoint through the Connect API's rules; a disabled endpoint sends no test event", async () => {
    const { row } = await createConnect(a);
    expect((await a.submit(`${PAGE}/connect/${row.id}/disable`)).statusCode).toBe(303);
    expect((await endpointsOf(a)).find((e) => e.id === row.id)!.status).toBe('disabled');
    const test = await a.submit(`${PAGE}/connect/${row.id}/test`);
    expect(test.statusCode).toBe(409);
    expect(test.body).toContain('The endpoint is disabled');
    expect((await a.submit(`${PAGE}/connect/${row.id}/enable`)).statusCode).toBe(303);
    expect((await endpointsOf(a)).find((e) => e.id === row.id)!.status).toBe('enabled');
  });

  it("B1/B8 another workspace's endpoint or delivery (or a malformed id): 404 on every page and action, nothing changed", async () => {
    const { row } = await createConnect(a);
    await a.submit(`${PAGE}/connect/${row.id}/test`);
    await pump(app, async () => (await attemptsOf(row.id)).length === 1, 'the test delivery');
    const [delivery] = await attemptsOf(row.id);
    const before = await endpointsOf(a);
    expect((await b.open(`${PAGE}/connect/${row.id}`)).statusCode).toBe(404);
    expect((await b.open(`${PAGE}/messaging/${row.id}`)).statusCode).toBe(404);
    expect((await b.open(`${PAGE}/connect/abc`)).statusCode).toBe(404);
    for (const path of ['test', 'disable', 'rotate-secret', 'delete', `deliveries/${delivery!.id}/redeliver`]) {
      const res = await b.submit(`${PAGE}/connect/${row.id}/${path}`, { confirm: 'yes' });
      expect(res.statusCode, path).toBe(404);
      expect(res.body).not.toMatch(SECRET);
    }
    // A's own endpoint with a delivery id that is not its own.
    expect((await a.submit(`${PAGE}/connect/${row.id}/deliveries/dlv_abcdefghijkl/redeliver`)).statusCode).toBe(404);
    expect(await endpointsOf(a)).toEqual(before);
    expect(await attemptsOf(row.id)).toHaveLength(1);
  });

  it('a Messaging endpoint has a delivery log, redelivery, test events and disabling too', async () => {
    await a.submit(`${PAGE}/messaging`, { api: 'messaging', url: receiver.url, enabled_events: 'message.received' });
    const [row] = (await endpointsOf(a)).filter((e) => e.api === 'messaging');
    await app.platform.store.db.transaction().execute((tx) =>
      emitEvent(tx, {
        workspaceId: a.owner.workspace.id,
        api: 'messaging',
        type: 'message.received',
        data: { note: 'from the page test' },
        at: app.platform.now(),
      }),
    );
    await pump(app, async () => (await attemptsOf(row!.id)).length === 1, 'the messaging delivery');
    const log = await a.open(`${PAGE}/messaging/${row!.id}`);
    expect(log.statusCode).toBe(200);
    expect(log.body).toContain('message.received');
    const [delivery] = await attemptsOf(row!.id);
    expect((await b.submit(`${PAGE}/messaging/${row!.id}/deliveries/${delivery!.id}/redeliver`)).statusCode).toBe(404);
    expect((await a.submit(`${PAGE}/messaging/${row!.id}/deliveries/${delivery!.id}/redeliver`)).statusCode).toBe(303);
    await pump(app, async () => (await attemptsOf(row!.id)).length === 2, 'the messaging redelivery');
    expect((await a.open(`${PAGE}/messaging/${row!.id}`)).body).toContain(`redelivery of <code>${delivery!.id}</code>`);
    // A test event through the Messaging API's operation, then disabling it from the page.
    expect((await a.submit(`${PAGE}/messaging/${row!.id}/test`)).statusCode).toBe(303);
    await pump(app, async () => (await attemptsOf(row!.id)).length === 3, 'the messaging test event');
    expect((await a.open(`${PAGE}/messaging/${row!.id}`)).body).toContain('webhook_endpoint.test');
    expect((await b.submit(`${PAGE}/messaging/${row!.id}/disable`)).statusCode).toBe(404);
    expect((await a.submit(`${PAGE}/messaging/${row!.id}/disable`)).statusCode).toBe(303);
    expect((await endpointsOf(a)).find((e) => e.id === row!.id)?.status).toBe('disabled');
    expect((await a.open(PAGE)).body).toContain(`${PAGE}/messaging/${row!.id}/enable`);
  });

  it('delete asks for confirmation, then deletes', async () => {
    const { row } = await createConnect(a);
    const ask = await a.submit(`${PAGE}/connect/${row.id}/delete`);
    expect(ask.statusCode).toBe(200);
    expect(ask.body).toContain('Yes, delete it');
    expect((await endpointsOf(a)).some((e) => e.id === row.id)).toBe(true);
    const done = await a.submit(`${PAGE}/connect/${row.id}/delete`, { confirm: 'yes' });
    expect(done.statusCode).toBe(303);
    expect((await endpointsOf(a)).some((e) => e.id === row.id)).toBe(false);
  });
});
