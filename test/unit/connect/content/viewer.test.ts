// The public viewer /l/<slug>: the page and its headers (CSP without inline script, framing by
// itself only, no Referer), escaping (bad-inputs J3), revoked and expired links (bad-inputs B7), downloads (bad-inputs B7), the
// assets, link previews, and the activity beacons refusing bad tokens and bodies (no change).
import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { build, buildShared } from '#test/helper.js';
import { beacon, LINKS, newDocument, newLink, office, openViewer, PNG, PROBLEM, snapshot, slugOf, tenant, type Tenant } from './support.js';

// Sign-ups hash passwords (scrypt) and uploads run pdf.js: slow on a busy machine.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

describe('Connect viewer', () => {
  let app: FastifyInstance;
  let a: Tenant;
  let pdfDoc: { id: string };
  beforeAll(async () => {
    app = await buildShared();
    a = await tenant(app, 'viewer-a');
    pdfDoc = await newDocument(app, a, { title: 'Autumn brochure' });
  });

  it('GET /l/<slug>: the page with its data- attributes, one external module script, strict headers', async () => {
    const link = await newLink(app, a, pdfDoc.id);
    const { res, sessionId, token, cookie } = await openViewer(app, link.url);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    const csp = String(res.headers['content-security-policy']);
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).toContain("frame-ancestors 'self'");
    expect(res.headers['x-frame-options']).toBe('SAMEORIGIN');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toContain('<script type="module" src="/l/assets/viewer.js"></script>');
    expect(res.body).not.toMatch(/<script>(?!<\/script>)|<script(?![^>]*src=)[^>]*>/);
    expect(res.body).toContain('data-kind="pdf"');
    expect(res.body).toContain(`data-file="/l/${slugOf(link.url)}/file"`);
    expect(sessionId).toMatch(/^rs_/);
    expect(token).toMatch(/^[0-9A-Za-z]{32}$/);
    expect(cookie).toMatch(/^reader=[0-9A-Za-z]{24}$/);
  });

  it('the assets: viewer script, stylesheet, pdf.js and its worker from our origin; unknown names 404', async () => {
    for (const name of ['viewer.js', 'viewer.css', 'pdf.min.mjs', 'pdf.worker.min.mjs', 'standard_fonts/FoxitSerif.pfb']) {
      const res = await app.inject({ url: `/l/assets/${name}` });
      expect(res.statusCode, name).toBe(200);
      expect(res.rawPayload.length).toBeGreaterThan(100);
    }
    expect((await app.inject({ url: '/l/assets/viewer.js' })).headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect((await app.inject({ url: '/l/assets/../../package.json' })).statusCode).toBe(404);
    expect((await app.inject({ url: '/l/assets/%2e%2e%2fpackage.json' })).statusCode).toBe(404);
  });

  it('J3 HTML in the document title, file name and recipient: escaped on the page, no img element', async () => {
    const xss = '<img src=x onerror=alert(1)>';
    const doc = await newDocument(app, a, { title: xss, filename: `${xss}.pdf` });
    const link = await newLink(app, a, doc.id, { external_id: xss, recipient: { email: 'lena@example.com' } });
    const { res } = await openViewer(app, link.url);
    expect(res.body).not.toContain('<img');
    expect(res.body).toContain('&lt;img src=x onerror=alert(1)&gt;');
  });

  it('an image document: shown as an <img> of the file route', async () => {
    const doc = await newDocument(app, a, { bytes: PNG, filename: 'map.png', type: 'image/png' });
    const link = await newLink(app, a, doc.id);
    const { res } = await openViewer(app, link.url);
    expect(res.body).toContain(`<img src="/l/${slugOf(link.url)}/file"`);
    const file = await app.inject({ url: `/l/${slugOf(link.url)}/file` });
    expect(file.statusCode).toBe(200);
    expect(file.headers['content-type']).toBe('image/png');
    expect(file.headers['content-disposition']).toMatch(/^inline; /);
  });

  it('an office document without download permission: not shown, not served (403)', async () => {
    const doc = await newDocument(app, a, { bytes: office('docx'), filename: 'offer.docx', type: 'application/octet-stream' });
    const link = await newLink(app, a, doc.id);
    const { res } = await openViewer(app, link.url);
    expect(res.body).toContain('data-kind="download"');
    expect(res.body).not.toContain('?download=1');
    expect((await app.inject({ url: `/l/${slugOf(link.url)}/file` })).statusCode).toBe(403);
  });

  it('download with permission: attachment, counted on the link and the session of this reader', async () => {
    const link = await newLink(app, a, pdfDoc.id, { allow_download: true });
    const opened = await openViewer(app, link.url);
    const href = /href="([^"]*download=1[^"]*)"/.exec(opened.res.body)?.[1]?.replace(/&amp;/g, '&');
    expect(href).toBe(`/l/${slugOf(link.url)}/file?download=1&session=${opened.sessionId}`);
    const res = await app.inject({ url: href!, headers: { cookie: opened.cookie } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-disposition']).toMatch(/^attachment; filename=/);
    const session = await app.platform.store.db.selectFrom('reader_sessions').select('downloaded').where('id', '=', opened.sessionId).executeTakeFirstOrThrow();
    expect(session.downloaded).toBe(true);
    const analytics = (await app.inject({ url: `${LINKS}/${link.id}/analytics`, headers: a.auth })).json();
    expect(analytics.downloads).toBe(1);
  });

  it('B7 download on a link without download permission: 403; nothing counted', async () => {
    const link = await newLink(app, a, pdfDoc.id);
    const before = await snapshot(app);
    const res = await app.inject({ url: `/l/${slugOf(link.url)}/file?download=1` });
    expect(res.statusCode).toBe(403);
    // The download link is opened by the browser: the viewer's page, not a problem.
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.body).toContain('has not allowed downloads');
    expect(await snapshot(app)).toEqual(before);
  });

  it('B7 a revoked link: 410 HTML page, no session, no link.opened; its file 410', async () => {
    const link = await newLink(app, a, pdfDoc.id);
    expect((await app.inject({ method: 'POST', url: `${LINKS}/${link.id}/revoke`, headers: a.auth })).statusCode).toBe(200);
    const before = await snapshot(app);
    const res = await app.inject({ url: `/l/${slugOf(link.url)}` });
    expect(res.statusCode).toBe(410);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.body).toContain('no longer available');
    expect(res.body).not.toContain('<script');
    expect((await app.inject({ url: `/l/${slugOf(link.url)}/file` })).statusCode).toBe(410);
    expect(await snapshot(app)).toEqual(before);
  });

  it('B7 an expired link: 410 page, no session, no event', async () => {
    const link = await newLink(app, a, pdfDoc.id, { expires_at: new Date(Date.now() + 60_000).toISOString() });
    await app.platform.store.db
      .updateTable('links')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('id', '=', link.id)
      .execute();
    const before = await snapshot(app);
    const res = await app.inject({ url: `/l/${slugOf(link.url)}` });
    expect(res.statusCode).toBe(410);
    expect(await snapshot(app)).toEqual(before);
  });

  it('an unknown or malformed slug: 404 HTML page', async () => {
    for (const slug of ['Xk9mP2qR7sT4vW8yZ1bC3d', 'abc', '%00', 'x'.repeat(300)]) {
      const res = await app.inject({ url: `/l/${slug}` });
      expect([400, 404], slug).toContain(res.statusCode);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    }
  });

  it('HEAD and link-preview fetchers: the page, but no session and no event', async () => {
    const link = await newLink(app, a, pdfDoc.id);
    const before = await snapshot(app);
    const head = await app.inject({ method: 'HEAD', url: `/l/${slugOf(link.url)}` });
    expect(head.statusCode).toBe(200);
    const preview = await app.inject({ url: `/l/${slugOf(link.url)}`, headers: { 'user-agent': 'WhatsApp/2.23.20.0 A' } });
    expect(preview.statusCode).toBe(200);
    expect(preview.body).toContain('data-beacon=""');
    expect(await snapshot(app)).toEqual(before);
  });

  it('device from the User-Agent: mobile, tablet, desktop, unknown', async () => {
    const link = await newLink(app, a, pdfDoc.id);
    const agents: [string, string][] = [
      ['Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148', 'mobile'],
      ['Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 Chrome/120.0 Mobile Safari/537.36', 'mobile'],
      ['Mozilla/5.0 (iPad; CPU OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148', 'tablet'],
      ['Mozilla/5.0 (Linux; Android 13; SM-X700) AppleWebKit/537.36 Chrome/120.0 Safari/537.36', 'tablet'],
      ['Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/120.0 Safari/537.36', 'desktop'],
      ['something/1.0', 'unknown'],
    ];
    for (const [ua, device] of agents) {
      const opened = await openViewer(app, link.url, { 'user-agent': ua });
      const row = await app.platform.store.db.selectFrom('reader_sessions').select('device').where('id', '=', opened.sessionId).executeTakeFirstOrThrow();
      expect(row.device, ua).toBe(device);
    }
  });

  describe('beacons', () => {
    it('a good beacon: 204; page views and time recorded, time capped by the clock', async () => {
      const link = await newLink(app, a, pdfDoc.id);
      const opened = await openViewer(app, link.url);
      const res = await beacon(app, opened, { pages: [{ page: 2, views: 1, ms: 3_000_000 }] });
      expect(res.statusCode, res.body).toBe(204);
      const pages = await app.platform.store.db
        .selectFrom('reader_page_stats')
        .selectAll()
        .where('session_id', '=', opened.sessionId)
        .orderBy('page')
        .execute();
      expect(pages.map((p) => [p.page, Number(p.views)])).toEqual([
        [1, 1],
        [2, 1],
      ]);
      // three seconds of test at most have passed: 3,000 s cannot have been read
      expect(Number(pages[1]!.time_ms)).toBeLessThan(60_000);
    });

    it('a wrong session token, another session id, another link slug: 404; nothing changes', async () => {
      const link = await newLink(app, a, pdfDoc.id);
      const other = await newLink(app, a, pdfDoc.id);
      const opened = await openViewer(app, link.url);
      const second = await openViewer(app, other.url);
      const before = await snapshot(app);
      const body = { pages: [{ page: 2, views: 1, ms: 100 }] };
      expect((await beacon(app, { ...opened, token: 'A'.repeat(32) }, body)).statusCode).toBe(404);
      expect((await beacon(app, { beaconUrl: opened.beaconUrl, token: second.token }, body)).statusCode).toBe(404);
      expect((await beacon(app, { beaconUrl: second.beaconUrl.replace(slugOf(other.url), slugOf(link.url)), token: second.token }, body)).statusCode).toBe(404);
      expect((await beacon(app, { ...opened, beaconUrl: opened.beaconUrl.replace(opened.sessionId, 'rs_0000000000000000') }, body)).statusCode).toBe(404);
      expect(await snapshot(app)).toEqual(before);
    });

    it('bad bodies (unknown field, wrong types, page past the document, duplicate pages, no token): 400; nothing changes', async () => {
      const link = await newLink(app, a, pdfDoc.id);
      const opened = await openViewer(app, link.url);
      const before = await snapshot(app);
      const bodies: Record<string, unknown>[] = [
        { isAdmin: true },
        { pages: [{ page: '2', views: 1, ms: 1 }] },
        { pages: [{ page: 0, views: 1, ms: 1 }] },
        { pages: [{ page: 2, views: -1, ms: 1 }] },
        { pages: [{ page: 4, views: 1, ms: 1 }] },
        {
          pages: [
            { page: 2, views: 1, ms: 1 },
            { page: 2, views: 1, ms: 1 },
          ],
        },
        { pages: [{ page: 2, views: 1, ms: 1, extra: 1 }] },
        { ended: 'yes' },
      ];
      for (const body of bodies) {
        const res = await beacon(app, opened, body);
        expect(res.statusCode, JSON.stringify(body)).toBe(400);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      }
      const noToken = await app.inject({ method: 'POST', url: opened.beaconUrl, payload: { pages: [] } });
      expect(noToken.statusCode).toBe(400);
      const malformed = await app.inject({ method: 'POST', url: opened.beaconUrl, headers: { 'content-type': 'application/json' }, payload: '{"token":' });
      expect(malformed.statusCode).toBe(400);
      expect(await snapshot(app)).toEqual(before);
    });

    it('an oversized beacon (over 8 KiB, or over 100 pages): 413 or 400; nothing changes', async () => {
      const link = await newLink(app, a, pdfDoc.id);
      const opened = await openViewer(app, link.url);
      const before = await snapshot(app);
      const big = await beacon(app, opened, { pages: Array.from({ length: 400 }, (_, i) => ({ page: i + 1, views: 1, ms: 1 })) });
      expect(big.statusCode).toBe(413);
      expect(big.json().type).toBe(`${PROBLEM}payload-too-large`);
      const many = await beacon(app, opened, { pages: Array.from({ length: 101 }, () => ({ page: 1, views: 0, ms: 0 })) });
      expect(many.statusCode).toBe(400);
      expect(await snapshot(app)).toEqual(before);
    });

    it('after the session ended (tab closed): 409, nothing changes', async () => {
      const link = await newLink(app, a, pdfDoc.id);
      const opened = await openViewer(app, link.url);
      expect((await beacon(app, opened, { ended: true })).statusCode).toBe(204);
      const before = await snapshot(app);
      const res = await beacon(app, opened, { pages: [{ page: 1, views: 1, ms: 10 }] });
      expect(res.statusCode).toBe(409);
      expect(await snapshot(app)).toEqual(before);
    });

    it('after the link was revoked: 410, nothing changes', async () => {
      const link = await newLink(app, a, pdfDoc.id);
      const opened = await openViewer(app, link.url);
      await app.inject({ method: 'POST', url: `${LINKS}/${link.id}/revoke`, headers: a.auth });
      const before = await snapshot(app);
      expect((await beacon(app, opened, { pages: [{ page: 1, views: 1, ms: 10 }] })).statusCode).toBe(410);
      expect(await snapshot(app)).toEqual(before);
    });
  });

  it('K2 a burst from one IP on /l/<slug>: 429 HTML page with Retry-After; the refused requests open no session', async () => {
    const limited = await build({ env: { RATE_LIMIT_IP_PER_MINUTE: '4' } });
    const who = await tenant(limited, 'viewer-k2'); // the sign-up is one request of the IP's budget
    const doc = await newDocument(limited, who);
    const link = await newLink(limited, who, doc.id);
    const statuses: number[] = [];
    let refused;
    for (let i = 0; i < 6; i++) {
      const res = await limited.inject({ url: `/l/${slugOf(link.url)}` });
      statuses.push(res.statusCode);
      if (res.statusCode === 429) refused = res;
    }
    expect(statuses.slice(0, 3)).toEqual([200, 200, 200]);
    expect(statuses.slice(3)).toEqual([429, 429, 429]);
    expect(refused!.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(Number(refused!.headers['retry-after'])).toBeGreaterThan(0);
    const sessions = await limited.platform.store.db.selectFrom('reader_sessions').select('id').execute();
    expect(sessions).toHaveLength(3);
  }, 60_000);
});
