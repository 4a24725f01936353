// Reading per day: sessions opened through the viewer bucketed by the day they started in the
// sender's time zone, every day of the range present; bad inputs (unknown time zone, from after
// to, a range over 366 days, another workspace's id) answer 400 or 404.
import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { DOCS, LINKS, newDocument, newLink, openViewer, schemaErrors, tenant, type Tenant } from './support.js';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

let app: FastifyInstance;
let a: Tenant;
let b: Tenant;
let clock = new Date('2026-11-23T22:30:00Z'); // 23:30 in Berlin, already the 24th in Tokyo

beforeAll(async () => {
  app = await buildShared({ overrides: { now: () => clock } });
  a = await tenant(app, 'daily-a');
  b = await tenant(app, 'daily-b');
});

describe('reading per day', () => {
  it('views and unique readers per day, cut in the time zone asked for', async () => {
    const doc = await newDocument(app, a);
    const link = await newLink(app, a, doc.id);
    const other = await newLink(app, a, doc.id);
    const first = await openViewer(app, link.url); // 2026-11-23 22:30 UTC
    await openViewer(app, link.url, { cookie: first.cookie }); // the same reader again
    clock = new Date('2026-11-23T23:05:00Z'); // 00:05 on the 24th in Berlin (tokens live an hour)
    await openViewer(app, other.url);

    const daily = async (url: string, query: string) => {
      const res = await app.inject({ url: `${url}/analytics/daily?${query}`, headers: a.auth });
      expect(res.statusCode, res.body).toBe(200);
      expect(await schemaErrors('DailyReadingSeries', res.json())).toEqual([]);
      return res.json();
    };
    expect((await daily(`${DOCS}/${doc.id}`, 'from=2026-11-22&to=2026-11-24')).days).toEqual([
      { date: '2026-11-22', views: 0, unique_readers: 0 },
      { date: '2026-11-23', views: 3, unique_readers: 2 },
      { date: '2026-11-24', views: 0, unique_readers: 0 },
    ]);
    const berlin = await daily(`${DOCS}/${doc.id}`, 'time_zone=Europe/Berlin&from=2026-11-23&to=2026-11-24');
    expect(berlin).toMatchObject({ time_zone: 'Europe/Berlin', from: '2026-11-23', to: '2026-11-24' });
    expect(berlin.days).toEqual([
      { date: '2026-11-23', views: 2, unique_readers: 1 },
      { date: '2026-11-24', views: 1, unique_readers: 1 },
    ]);
    expect((await daily(`${LINKS}/${link.id}`, 'time_zone=Asia/Tokyo&from=2026-11-24&to=2026-11-24')).days).toEqual([
      { date: '2026-11-24', views: 2, unique_readers: 1 },
    ]);
    // Default range: the 30 days up to today in the zone.
    const recent = await daily(`${LINKS}/${link.id}`, 'time_zone=Europe/Berlin');
    expect(recent.days).toHaveLength(30);
    expect(recent.to).toBe('2026-11-24');
  });

  it('bad inputs: unknown time zone, from after to, over 366 days, malformed date: 400; another workspace’s id: 404', async () => {
    const doc = await newDocument(app, a);
    const link = await newLink(app, a, doc.id);
    for (const [query, pointer] of [
      ['time_zone=Mars/Olympus', '/query/time_zone'],
      ['time_zone=Europe%2FBerl1n', '/query/time_zone'],
      ['from=2026-11-24&to=2026-11-23', '/query/from'],
      ['from=2025-01-01&to=2026-11-23', '/query/to'],
      ['from=2026-13-01', '/query/from'],
    ]) {
      for (const base of [`${DOCS}/${doc.id}`, `${LINKS}/${link.id}`]) {
        const res = await app.inject({ url: `${base}/analytics/daily?${query}`, headers: a.auth });
        expect(res.statusCode, `${base} ${query}`).toBe(400);
        expect(res.json().errors[0].pointer, query).toBe(pointer);
      }
    }
    expect((await app.inject({ url: `${DOCS}/${doc.id}/analytics/daily`, headers: b.auth })).statusCode).toBe(404);
    expect((await app.inject({ url: `${LINKS}/${link.id}/analytics/daily`, headers: b.auth })).statusCode).toBe(404);
  });
});
