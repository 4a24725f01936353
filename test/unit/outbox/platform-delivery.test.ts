// Deliveries through the platform's own poster (the SSRF-safe client): signed bodies a plain
// HMAC check verifies, redirects never followed, slow receivers cut at the timeout.
import { createHmac } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { enqueue } from '#server/outbox/outbox.js';
import { stripeStyleHeader } from '#server/lib/signatures.js';
import { newId } from '#server/lib/ids.js';
import { buildShared } from '#test/helper.js';
import { startReceiver } from '#test/support/receiver.js';
import { eventually } from '#test/support/eventually.js';

const SECRET = 'whsec_platform_delivery_test_0001';
let app: FastifyInstance;
let workspaceId: string;
const urls = new Map<string, string>();

beforeAll(async () => {
  app = await buildShared();
  workspaceId = newId('ws');
  await app.platform.store.db.insertInto('workspaces').values({ id: workspaceId, name: 'D', slug: workspaceId.toLowerCase() }).execute();
  app.platform.outbox.register('delivery_test', async (endpointId) => {
    const url = urls.get(endpointId);
    return url ? { url, headers: (payload, at) => ({ 'x-connect-signature': stripeStyleHeader([SECRET], payload, Math.floor(at.getTime() / 1000)) }) } : null;
  });
});

async function deliver(url: string) {
  const endpointId = newId('whe');
  urls.set(endpointId, url);
  const eventId = newId('evt');
  const payload = JSON.stringify({ id: eventId, type: 'link.opened', created: 1795428000, data: {} });
  await enqueue(app.platform.store.db, { workspaceId, endpointKind: 'delivery_test', endpointId, eventId, eventType: 'link.opened', payload });
  const row = await eventually(
    async () => {
      await app.platform.outbox.runOnce();
      const found = await app.platform.store.db.selectFrom('outbox').selectAll().where('event_id', '=', eventId).executeTakeFirstOrThrow();
      return found.attempts > 0 && !found.lease_until && found;
    },
    { within: 2_000, what: 'the delivery attempt' },
  );
  return { row, payload };
}

describe('deliveries through the SSRF-safe poster', () => {
  it('F1 the signature verifies with a plain HMAC-SHA256 of "t.raw_body"', async () => {
    const receiver = await startReceiver();
    const { row, payload } = await deliver(receiver.url);
    await receiver.close();
    expect(row.status).toBe('succeeded');
    const header = String(receiver.received[0].headers['x-connect-signature']);
    const [, t, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header)!;
    expect(receiver.received[0].body).toBe(payload);
    expect(createHmac('sha256', SECRET).update(`${t}.${receiver.received[0].body}`).digest('hex')).toBe(v1);
  });

  it('F6 a redirect is not followed: the target gets nothing and the attempt is a failure', async () => {
    const target = await startReceiver();
    const { createServer } = await import('node:http');
    const server = createServer((_req, res) => {
      res.writeHead(302, { location: target.url });
      res.end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as { port: number };
    const { row } = await deliver(`http://127.0.0.1:${port}/hook`);
    await new Promise<void>((r) => server.close(() => r()));
    await target.close();
    expect(target.received).toHaveLength(0);
    expect(row).toMatchObject({ status: 'pending', last_status_code: 302 });
    const attempts = await app.platform.store.db.selectFrom('delivery_attempts').selectAll().where('outbox_id', '=', row.id).execute();
    expect(attempts).toHaveLength(1);
    expect(attempts[0].status_code).toBe(302);
  });
});
