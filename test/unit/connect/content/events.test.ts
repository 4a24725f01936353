// Events about links and sessions land in the outbox, in the transaction of their change, with
// the payloads of spec/webhooks/connect.tsp (external_id and recipient included); session.updated
// is throttled to one per 30 s per open session, plus one at the end (a controllable clock).
import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { sweepSessions, SESSION_LIMITS } from '#server/apis/connect/content/sessions.js';
import { buildShared } from '#test/helper.js';
import { beacon, DOCS, LINKS, newDocument, newLink, openViewer, outboxEvents, schemaErrors, tenant, webhookEndpoint, type Tenant } from './support.js';

// Sign-ups hash passwords (scrypt) and uploads run pdf.js: slow on a busy machine.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

describe('Connect content events', () => {
  let app: FastifyInstance;
  let a: Tenant;
  let clock = new Date();
  const advance = (ms: number) => {
    clock = new Date(clock.getTime() + ms);
  };
  beforeAll(async () => {
    app = await buildShared({ overrides: { now: () => clock } });
    a = await tenant(app, 'events-a');
    await webhookEndpoint(app, a.workspaceId);
  });

  it('link.opened: one outbox row when the viewer opens, matching the spec with external_id and recipient', async () => {
    const doc = await newDocument(app, a, { title: 'Lisbon city break 2027' });
    const link = await newLink(app, a, doc.id, {
      external_id: 'crm-contact-48213',
      recipient: { phone: '+49 151 12345678', email: 'lena.fischer@example.com' },
    });
    expect(link.recipient).toEqual({ phone: '+4915112345678', email: 'lena.fischer@example.com' });
    const opened = await openViewer(app, link.url, { 'user-agent': 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) Mobile/15E148' });
    const events = (await outboxEvents(app, a.workspaceId, 'link.opened')).filter((e) => e.data.link.id === link.id);
    expect(events).toHaveLength(1);
    const event = events[0];
    expect(await schemaErrors('LinkOpenedEvent', event)).toEqual([]);
    expect(event).toMatchObject({
      type: 'link.opened',
      api_version: '2026-11-01',
      data: {
        external_id: 'crm-contact-48213',
        recipient: { phone: '+4915112345678', email: 'lena.fischer@example.com' },
        link: { id: link.id, document_id: doc.id, url: link.url, status: 'active', allow_download: false, revoked_at: null },
        document: { id: doc.id, title: 'Lisbon city break 2027', page_count: 3 },
        session: {
          id: opened.sessionId,
          device: 'mobile',
          ended_at: null,
          duration_ms: 0,
          pages_viewed: 1,
          downloaded: false,
          pages: [{ page: 1, views: 1, time_ms: 0 }],
        },
      },
    });
    expect(Object.keys(event)).toEqual(['id', 'type', 'created', 'api_version', 'data']);
  });

  it('session.updated: throttled to one per 30 s while open, the held-back one sent by the sweeper, one at the end', async () => {
    const doc = await newDocument(app, a);
    const link = await newLink(app, a, doc.id);
    const opened = await openViewer(app, link.url);
    const updates = async () => (await outboxEvents(app, a.workspaceId, 'session.updated')).filter((e) => e.data.session.id === opened.sessionId);

    advance(5_000);
    expect(
      (
        await beacon(app, opened, {
          pages: [
            { page: 1, views: 0, ms: 4_000 },
            { page: 2, views: 1, ms: 0 },
          ],
        })
      ).statusCode,
    ).toBe(204);
    advance(5_000);
    expect(
      (
        await beacon(app, opened, {
          pages: [
            { page: 2, views: 0, ms: 4_000 },
            { page: 3, views: 1, ms: 0 },
          ],
        })
      ).statusCode,
    ).toBe(204);
    expect(await updates()).toHaveLength(0); // page flips within 30 s of link.opened: held back

    await sweepSessions(app.platform);
    expect(await updates()).toHaveLength(0); // not due yet
    advance(SESSION_LIMITS.updateEveryMs);
    await sweepSessions(app.platform);
    const [first] = await updates();
    expect(first.data.session).toMatchObject({ ended_at: null, duration_ms: 8_000, pages_viewed: 3 });
    expect(await schemaErrors('SessionUpdatedEvent', first)).toEqual([]);
    await sweepSessions(app.platform);
    expect(await updates()).toHaveLength(1); // nothing new to report

    advance(2_000);
    expect((await beacon(app, opened, { pages: [{ page: 3, views: 0, ms: 2_000 }], ended: true })).statusCode).toBe(204);
    const all = await updates();
    expect(all).toHaveLength(2);
    expect(all[1].data.session).toMatchObject({
      ended_at: clock.toISOString(),
      duration_ms: 10_000,
      pages: [
        { page: 1, views: 1, time_ms: 4_000 },
        { page: 2, views: 1, time_ms: 4_000 },
        { page: 3, views: 1, time_ms: 2_000 },
      ],
    });
    expect(all[1].data.external_id).toBe(link.external_id);
  });

  it('a session idle for 30 minutes ends at its last activity, with one final session.updated', async () => {
    const doc = await newDocument(app, a);
    const link = await newLink(app, a, doc.id);
    const opened = await openViewer(app, link.url);
    const lastActivity = clock.toISOString();
    advance(SESSION_LIMITS.idleMs + 1_000);
    await sweepSessions(app.platform);
    const updates = (await outboxEvents(app, a.workspaceId, 'session.updated')).filter((e) => e.data.session.id === opened.sessionId);
    expect(updates).toHaveLength(1);
    expect(updates[0].data.session.ended_at).toBe(lastActivity);
    await sweepSessions(app.platform);
    expect((await outboxEvents(app, a.workspaceId, 'session.updated')).filter((e) => e.data.session.id === opened.sessionId)).toHaveLength(1);
  });

  it('link.revoked: on revoke (reason revoked), once; on document delete (reason document_deleted)', async () => {
    const doc = await newDocument(app, a);
    const link = await newLink(app, a, doc.id, { recipient: { email: 'only@example.com' } });
    const revoked = await app.inject({ method: 'POST', url: `${LINKS}/${link.id}/revoke`, headers: a.auth });
    expect(revoked.json()).toMatchObject({ status: 'revoked', revoked_at: clock.toISOString() });
    await app.inject({ method: 'POST', url: `${LINKS}/${link.id}/revoke`, headers: a.auth });
    const events = (await outboxEvents(app, a.workspaceId, 'link.revoked')).filter((e) => e.data.link.id === link.id);
    expect(events).toHaveLength(1);
    expect(await schemaErrors('LinkRevokedEvent', events[0])).toEqual([]);
    expect(events[0].data).toMatchObject({
      reason: 'revoked',
      recipient: { email: 'only@example.com' },
      external_id: link.external_id,
      link: { status: 'revoked' },
    });
    expect(events[0].data.recipient).not.toHaveProperty('phone');

    const other = await newLink(app, a, doc.id);
    expect((await app.inject({ method: 'DELETE', url: `${DOCS}/${doc.id}`, headers: a.auth })).statusCode).toBe(204);
    const deleted = (await outboxEvents(app, a.workspaceId, 'link.revoked')).filter((e) => e.data.link.id === other.id);
    expect(deleted).toHaveLength(1);
    expect(deleted[0].data.reason).toBe('document_deleted');
    expect((await outboxEvents(app, a.workspaceId, 'link.revoked')).filter((e) => e.data.link.id === link.id)).toHaveLength(1);
  });

  it('no enabled endpoint: no outbox row, the change still happens', async () => {
    const c = await tenant(app, 'events-c');
    const doc = await newDocument(app, c);
    const link = await newLink(app, c, doc.id);
    await openViewer(app, link.url);
    await app.inject({ method: 'POST', url: `${LINKS}/${link.id}/revoke`, headers: c.auth });
    expect(await outboxEvents(app, c.workspaceId)).toEqual([]);
  });
});
