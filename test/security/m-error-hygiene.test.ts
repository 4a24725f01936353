// Catalogue group M (error hygiene): every error is one problem+json shape from one handler, a
// forced 500 says nothing internal but carries its request id (body, header, log), conflicts
// name no constraint, pages fail as HTML, and the validator neither coerces bodies nor strips.
import { afterAll, describe, expect, it } from 'vitest';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import type { Store } from '#server/store/db.js';
import { buildShared } from '../helper.js';
import { viewerHeaders } from '#server/apis/connect/content/viewer-page.js';
import { CREATORS } from './creators.js';
import { expectNoChange, expectNoLeak, expectProblem, workspace, type Workspace } from './support.js';
import { expectProblems, loggedApp, recordErrors } from './logged-app.js';

const INTERNALS =
  'connect ECONNREFUSED db-primary.internal:5432 SELECT "contact_no" FROM "contacts" at /work/main/node_modules/kysely/dist/esm/x.js (server/apis/messaging/contacts/list.ts:12:7)';

/** The store, except that reading `table` throws an error full of internals while `armed`. */
function throwingOn(table: string, state: { armed: boolean }) {
  return (store: Store): Store => {
    const db = new Proxy(store.db, {
      get(target, property) {
        const value = Reflect.get(target, property);
        if (typeof value !== 'function') return value;
        const fail = () => Object.assign(new Error(INTERNALS), { detail: 'Key (contact_no)=(+4915112345678)' });
        // A query built on the request (selectFrom), or one built once and run compiled (#server/store/prepared.ts).
        if (property === 'selectFrom')
          return (from: unknown) => {
            if (state.armed && String(from).split(' ')[0] === table) throw fail();
            return value.call(target, from);
          };
        if (property === 'executeQuery')
          return (query: { sql: string }) => {
            if (state.armed && query.sql.includes(`from "${table}"`)) return Promise.reject(fail());
            return value.call(target, query);
          };
        return value.bind(target); // Kysely keeps its state in #private fields
      },
    });
    return { ...store, db, listen: store.listen.bind(store), notify: store.notify.bind(store), close: store.close.bind(store) };
  };
}

/**
 * The viewer's HTML error page (server/apis/connect/content/viewer-page.ts) with `status`: its headers (CSP, framing
 * by this origin, nosniff, no Referer, no-store), its title, no script, nothing internal, no JSON.
 */
function expectViewerPage(res: LightMyRequestResponse, status: number, what: string) {
  expect(res.statusCode, `${what} ${res.body.slice(0, 200)}`).toBe(status);
  const page = viewerHeaders();
  for (const name of ['content-type', 'content-security-policy', 'x-frame-options', 'x-content-type-options', 'referrer-policy', 'cache-control']) {
    expect(res.headers[name], `${what}: ${name}`).toBe(page[name]);
  }
  expect(res.headers['x-request-id'], what).toBeTruthy();
  // On the wire Node sends no body for HEAD; light-my-request 6.6 (pinned for Node 20, docs/dependencies.md)
  // does not emulate that, so a HEAD answer's headers are what there is to check.
  if (res.raw.req.method === 'HEAD') return;
  expect(res.body, what).toMatch(/^<!doctype html>/);
  expect(res.body, what).toContain('<link rel="stylesheet" href="/l/assets/viewer.css">');
  expect(res.body, what).toMatch(/<main class="message"><h1>[^<]+<\/h1><p>[^<]+<\/p><\/main>/);
  expect(res.body, what).not.toContain('<script');
  expect(res.body, what).not.toMatch(/problem|"type"|"status"|\{"/);
  expectNoLeak(res.body);
}

/** A live share link of `w`'s (downloads off) and its slug. */
async function shareLink(app: FastifyInstance, w: Workspace) {
  const documentId = await CREATORS['connect:documentId']!({ app, w, ids: {} });
  const res = await app.inject({
    method: 'POST',
    url: '/api/connect/links',
    headers: { authorization: w.connect },
    payload: { document_id: documentId, external_id: 'm-viewer', recipient: { phone: '+4915112345678' } },
  });
  expect(res.statusCode, res.body).toBe(201);
  return { id: res.json().id as string, slug: new URL(res.json().url).pathname.split('/').pop()! };
}

describe('M error hygiene', async () => {
  const app = await buildShared({ env: { RATE_LIMIT_PER_MINUTE: '5' } });
  const seen = recordErrors(app);
  const a = await workspace(app);
  afterAll(() => {
    expect(expectProblems(seen)).toBeGreaterThan(15); // bad-inputs M1 over every error answer of this file
  });

  it('M1 errors of every API and kind: problem+json with type, title, status (= HTTP), detail, instance and request_id', async () => {
    const answers: LightMyRequestResponse[] = [
      await app.inject({ url: '/api/contacts' }),
      await app.inject({ url: '/api/contacts/cnt_0000000000000000', headers: a.headers }),
      await app.inject({ url: '/api/account/me' }),
      await app.inject({ url: '/api/connect/documents/doc_0000000000000000', headers: { authorization: a.connect } }),
      await app.inject({ url: '/v1/auth/chatapp/status/lse_00000000000000000000', headers: { 'x-api-key': a.loginKey } }),
      await app.inject({ method: 'POST', url: '/api/contacts', headers: a.headers, payload: { name: 'x', contact_no: '12345' } }),
    ];
    expect(answers.map((r) => r.statusCode)).toEqual([401, 404, 401, 404, 404, 400]);
    expect(expectProblems(seen)).toBeGreaterThanOrEqual(answers.length);
  });

  describe('M2 forced 500', async () => {
    const state = { armed: false };
    const { app: failing, lines } = await loggedApp({ level: 'info', wrap: throwingOn('contacts', state) });
    const w = await workspace(failing);

    it('M2 a store that throws: 500 internal, generic detail, request id in body, header and log; no stack, SQL, hostname, node_modules or .ts:', async () => {
      state.armed = true;
      const res = await failing.inject({ url: '/api/contacts', headers: w.headers });
      state.armed = false;
      const body = expectProblem(res, 500, 'internal');
      expect(body).toMatchObject({ title: expect.any(String), detail: expect.any(String), instance: '/api/contacts' });
      expect(body.detail).not.toContain('ECONNREFUSED');
      expect(body.request_id).toBe(res.headers['x-request-id']);
      for (const leak of ['db-primary', 'SELECT', 'contact_no', 'node_modules', '.ts:', '/work/', 'ECONNREFUSED', '+4915112345678'])
        expect(res.body + JSON.stringify(res.headers), leak).not.toContain(leak);
      const logged = lines.map((l) => JSON.parse(l)).filter((e) => e.reqId === body.request_id && e.level >= 50);
      expect(logged.length, 'the failure is logged with its request id').toBeGreaterThan(0);
      expect(logged[0].err.message).toContain('ECONNREFUSED'); // the operator sees the cause
      expect(JSON.stringify(logged)).not.toContain('+4915112345678'); // but no value the driver attached (bad-inputs L3)
      expect((await failing.inject({ url: '/api/contacts', headers: w.headers })).statusCode).toBe(200); // and the server goes on
    });
  });

  it('M3 unique violation (the same contact number twice, the same custom field): 409 conflict naming no constraint', async () => {
    const w = await workspace(app);
    const create = () => app.inject({ method: 'POST', url: '/api/contacts', headers: w.headers, payload: { name: 'Lena', contact_no: '+4915112340001' } });
    expect((await create()).statusCode).toBe(201);
    const again = await expectNoChange(app, create);
    const body = expectProblem(again, 409, 'conflict');
    expect(JSON.stringify(body)).not.toMatch(/constraint|unique|duplicate|_key\b|_idx\b|pkey|violat/i);
    const field = () => app.inject({ method: 'POST', url: '/api/custom-fields', headers: w.headers, payload: { name: 'Loyalty tier', type: 'text' } });
    const first = await field();
    if (first.statusCode === 201) {
      const dup = await expectNoChange(app, field);
      expect(dup.statusCode, dup.body).toBe(409);
      expect(dup.body).not.toMatch(/constraint|unique|duplicate|pkey|violat/i);
    } else expect(first.statusCode, first.body).toBe(400); // a shape this check does not know: still no 500
  });

  it('M4 malformed JSON, bad Content-Type, unknown route, wrong method (405 + Allow), parser 413, multipart errors, limiter 429: one handler, never FST_ERR', async () => {
    const w = await workspace(app);
    const post = (type: string, payload: string | Buffer, url = '/api/contacts') =>
      app.inject({ method: 'POST', url, headers: { ...w.headers, 'content-type': type }, payload });
    const cases: [string, Promise<LightMyRequestResponse>, number, string][] = [
      ['malformed JSON', post('application/json', '{"name": '), 400, 'malformed-body'],
      ['text/plain', post('text/plain', '{"name":"x"}'), 415, 'unsupported-media-type'],
      ['unknown route', app.inject({ url: '/api/nothing-here', headers: w.headers }), 404, 'not-found'],
      ['wrong method', app.inject({ method: 'DELETE', url: '/api/contacts', headers: w.headers }), 405, 'method-not-allowed'],
      ['parser 413', post('application/json', JSON.stringify({ name: 'x'.repeat(2 * 1024 * 1024) })), 413, 'payload-too-large'],
      ['multipart without boundary', post('multipart/form-data', '--x\r\n\r\n', '/api/chatapp/media'), 400, 'malformed-body'],
      ['JSON to the upload operation', post('application/json', '{}', '/api/chatapp/media'), 415, 'unsupported-media-type'],
    ];
    for (const [name, pending, status, type] of cases) {
      const res = await expectNoChange(app, () => pending);
      expectProblem(res, status, type);
      expect(res.body, name).not.toMatch(/FST_|"statusCode"|"code"/);
      if (status === 405) expect(res.headers.allow).toMatch(/GET/);
    }
    const other = await workspace(app); // its own bucket: RATE_LIMIT_PER_MINUTE is 5
    let limited: LightMyRequestResponse | undefined;
    for (let i = 0; i < 7 && !limited; i++) {
      const res = await app.inject({ url: '/api/contacts', headers: other.headers });
      if (res.statusCode === 429) limited = res;
    }
    expectProblem(limited!, 429, 'rate-limited');
    expect(limited!.headers['retry-after']).toBeDefined();
  });

  it('M4 Accept: application/xml on an API route: 406 not-acceptable problem; JSON, wildcards and mixed lists still served', async () => {
    const [x, y] = [await workspace(app), await workspace(app)]; // fresh limiter buckets (5 a minute here)
    for (const accept of ['application/xml', 'text/xml;q=0.9, application/atom+xml']) {
      const res = await expectNoChange(app, () => app.inject({ url: '/api/contacts', headers: { ...x.headers, accept } }));
      expectProblem(res, 406, 'not-acceptable');
    }
    for (const accept of ['application/json', '*/*', 'application/xml, application/json;q=0.5', 'application/problem+json']) {
      expect((await app.inject({ url: '/api/contacts', headers: { ...y.headers, accept } })).statusCode, accept).toBe(200);
    }
  });

  it('M5 consent and viewer pages failing: an HTML error page with the same status, no internals', async () => {
    const pages: [string, number][] = [
      ['/l/lnk_no_such_link_slug', 404],
      ['/connect/authorize?client_id=cli_0000000000000000&response_type=code&redirect_uri=https%3A%2F%2Fcrm.test%2Fcb', 400],
    ];
    for (const [url, status] of pages) {
      const res = await app.inject(url);
      expect(res.statusCode, url).toBe(status);
      expect(res.headers['content-type'], url).toMatch(/^text\/html/);
      expect(res.body).toMatch(/<html/i);
      expectNoLeak(res.body);
    }
  });

  it('M6 validator: bodies never coerced nor stripped; query coerced to spec types; errors per field with a pointer', async () => {
    const w = await workspace(app);
    const coerced = await expectNoChange(app, () =>
      app.inject({ method: 'POST', url: '/api/contacts', headers: w.headers, payload: { name: 42, contact_no: '+4915112340002' } }),
    );
    expect(expectProblem(coerced, 400, 'validation').errors).toContainEqual(expect.objectContaining({ pointer: '/body/name' }));
    const stripped = await expectNoChange(app, () =>
      app.inject({ method: 'POST', url: '/api/contacts', headers: w.headers, payload: { name: 'x', contact_no: '+4915112340003', isAdmin: true } }),
    );
    expect(expectProblem(stripped, 400, 'validation').errors).toContainEqual(expect.objectContaining({ pointer: '/body/isAdmin' }));
    expect((await app.inject({ url: '/api/contacts?limit=5', headers: w.headers })).statusCode).toBe(200);
    expect(expectProblem(await app.inject({ url: '/api/contacts?limit=abc', headers: w.headers }), 400, 'validation').errors[0].pointer).toMatch(
      /^\/query\/limit/,
    );
  });

  // The list is capped at MAX_LISTED_ERRORS (server/lib/validation.ts); the detail gives the count.
  it('M6 errors per field are capped: 2,000 unknown fields answer a bounded list', async () => {
    const payload: Record<string, unknown> = { name: 'x', contact_no: '+4915112340004' };
    for (let i = 0; i < 2000; i++) payload[`f${i}`] = i;
    const res = await app.inject({ method: 'POST', url: '/api/contacts', headers: a.headers, payload });
    expect(expectProblem(res, 400, 'validation').errors.length).toBeLessThanOrEqual(100);
  });

  it('M6 the count in the detail is the count of entries listed: a send with a missing and an unknown field names those two', async () => {
    const w = await workspace(app);
    const payload = { contact_no: '+4915112340005', messageType: 'text', message: 'hi', colour: 'red' }; // no chatapp_phone_number
    const body = expectProblem(await app.inject({ method: 'POST', url: '/api/chatapp/send', headers: w.headers, payload }), 400, 'validation');
    // Ajv reports dozens of errors across the union's branches: the detail counts what the client reads.
    expect(body.detail).toBe('One or more inputs are invalid; see errors.');
    expect(body.errors).toEqual([
      { pointer: '/body/chatapp_phone_number', detail: 'is required' },
      { pointer: '/body/colour', detail: 'is not a known field' },
    ]);
  });

  // bad-inputs M7–M9: under /l/ (the share-link viewer, which a reader's browser opens) every refusal is the
  // viewer's HTML page with the status, never problem+json: before routing (malformed URLs, other
  // methods), unknown paths, and the page's and file's own errors. Only the beacon route, which the
  // page's script calls with JSON, answers problems. Each call comes from its own address: these
  // are public routes, limited per IP.
  let from = 0;
  const viewer = (url: string, method: 'GET' | 'HEAD' | 'POST' | 'PUT' | 'DELETE' = 'GET') =>
    app.inject({ method, url, remoteAddress: `198.51.100.${++from % 250}` });

  it('M7 malformed addresses under /l/ (bad percent-encoding, %00, over-long slug, bad query): 400 viewer page, nothing changed', async () => {
    const w = await workspace(app);
    const { slug } = await shareLink(app, w);
    const urls = [
      '/l/%E0%A4%A', // a truncated UTF-8 sequence
      '/l/%',
      '/l/ab%ZZ',
      `/l/${slug}%E0%A4%A`,
      '/l/ab%00c', // NUL
      `/l/${slug}%00/file`,
      `/l/${'a'.repeat(100)}`, // longer than any slug
      `/l/${'a'.repeat(600)}`, // longer than the router's longest path segment
      `/l/${slug}/file?download=2`,
      '/l/x/sessions/%ZZ/events', // even on the beacon's path: the router never reached it
    ];
    await expectNoChange(app, async () => {
      for (const url of urls) {
        for (const method of ['GET', 'HEAD'] as const) expectViewerPage(await viewer(url, method), 400, `${method} ${url.slice(0, 40)}`);
      }
      expectViewerPage(await viewer('/l/%E0%A4%A', 'POST'), 400, 'POST /l/%E0%A4%A');
    });
  });

  it('M8 unknown paths under /l/ (unknown slug, extra segments, trailing slash, /l, //, unknown asset): 404 viewer page; a real slug with extra segments opens nothing', async () => {
    const w = await workspace(app);
    const { slug } = await shareLink(app, w);
    const urls = [
      '/l/Zz9Yy8Xx7Ww6Vv5Uu4Tt3S', // 22 base62 characters, no such link
      `/l/${slug}/extra`,
      `/l/${slug}/extra/more`,
      `/l/${slug}/`, // trailing slash
      `/l/${slug}//`,
      `/l/${slug}/file/x`,
      `/l/${slug}/sessions`,
      '/l/',
      '/l',
      '/l?ref=chat',
      '/l//',
      '/l/assets/',
      '/l/assets/nope.js',
      `/l/${slug.slice(0, -1)}`,
    ];
    await expectNoChange(app, async () => {
      for (const url of urls) {
        for (const method of ['GET', 'HEAD'] as const) expectViewerPage(await viewer(url, method), 404, `${method} ${url}`);
      }
      expectViewerPage(await viewer(`/l/${slug}/extra`, 'POST'), 404, 'POST extra segment');
    });
    // The control: the same slug, as sent, opens the viewer.
    const page = await viewer(`/l/${slug}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('id="viewer"');
  });

  it("M9 other methods under /l/ (405 with Allow), a download that is off (403), a revoked link's page and file (410): viewer pages; the beacon alone answers problems", async () => {
    const w = await workspace(app);
    const { id, slug } = await shareLink(app, w);
    await expectNoChange(app, async () => {
      for (const [method, url, allow] of [
        ['POST', `/l/${slug}`, 'GET, HEAD'],
        ['DELETE', `/l/${slug}`, 'GET, HEAD'],
        ['PUT', `/l/${slug}/file`, 'GET, HEAD'],
        ['GET', `/l/${slug}/sessions/rs_0000000000000000/events`, 'POST'],
      ] as const) {
        const res = await viewer(url, method);
        expectViewerPage(res, 405, `${method} ${url}`);
        expect(res.headers.allow, `${method} ${url}`).toBe(allow);
      }
      expectViewerPage(await viewer(`/l/${slug}/file?download=1`), 403, 'download off');
      // The beacon route is the page script's JSON API: its own refusals stay problems.
      const beacon = await app.inject({
        method: 'POST',
        url: `/l/${slug}/sessions/rs_0000000000000000/events`,
        payload: { token: 'x' },
        remoteAddress: '198.51.100.251',
      });
      expectProblem(beacon, 400, 'validation');
    });
    const revoked = await app.inject({ method: 'POST', url: `/api/connect/links/${id}/revoke`, headers: { authorization: w.connect } });
    expect(revoked.statusCode, revoked.body).toBeLessThan(300);
    await expectNoChange(app, async () => {
      expectViewerPage(await viewer(`/l/${slug}`), 410, 'revoked page');
      expectViewerPage(await viewer(`/l/${slug}/file`), 410, 'revoked file');
      expectViewerPage(await viewer(`/l/${slug}/file?download=1`), 410, 'revoked download');
    });
  });
});
