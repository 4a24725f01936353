// Group B of the catalogue: tenant isolation. bad-inputs B1 and B8 are generated from the documents: every
// operation with a path id in generated/<api>/openapi.3.1.yaml is called with workspace B's
// credentials (each kind its security requirement accepts) on a real resource of workspace A.
// A new operation is covered without editing this file; a new kind of path id fails bad-inputs B1 until
// it gets a creator in creators.ts.
import { afterAll, describe, expect, it } from 'vitest';
import { base62 } from '#server/lib/ids.js';
import { buildShared } from '../helper.js';
import { storeTemplate } from '../unit/messaging/inbox/support.js';
import { BOUND, CREATORS, PUBLIC } from './creators.js';
import { changedTables, contentDigest, operationsWithPathIds, quiesce, urlOf, type Operation } from './sweep.js';
import { expectNoChange, expectProblem, workspaces, type Workspace } from './support.js';

/** Operations the sweep finds wrong, until the server is fixed (each reported). */
const KNOWN_BUGS: Record<string, string> = {};

const ops = operationsWithPathIds();
const swept = ops.filter((op) => !PUBLIC[op.operationId] && !BOUND[op.operationId]);
const covered = new Set<string>();
let calls = 0;

/** An id of the same shape that names nothing: same prefix, fresh random tail. */
function lookalike(id: string): string {
  const m = /^([a-z]+_)(.*)$/.exec(id);
  return m ? m[1] + base62(m[2]!.length || 16) : base62(id.length);
}

/** The problem body with the ids sent and the per-request `instance` and `request_id` taken out. */
function normalized(body: string, ids: Record<string, string>): unknown {
  const { instance: _instance, request_id: _requestId, ...rest } = JSON.parse(body);
  let text = JSON.stringify(rest);
  for (const id of Object.values(ids)) text = text.split(id).join('<id>');
  return JSON.parse(text);
}

interface Credential {
  scheme: string;
  headers: Record<string, string>;
  query?: string;
}

/** B's credential for each scheme the operation accepts. */
function credentials(op: Operation, w: Workspace, subscribeToken: string): Credential[] {
  const key = op.api === 'login' ? w.loginKey : w.key;
  const by: Record<string, Omit<Credential, 'scheme'>> = {
    OwnerBearer: { headers: { authorization: w.owner } },
    ConnectOAuth: { headers: { authorization: w.connect } },
    OAuthClientBasic: { headers: { authorization: w.client } },
    ApiKeyHeader: { headers: { 'x-api-key': key } },
    SubscribeToken: { headers: {}, query: `token=${encodeURIComponent(subscribeToken)}` },
  };
  return op.schemes.flatMap((scheme) => {
    const c = by[scheme];
    if (!c) throw new Error(`${op.operationId}: no credential of B for scheme ${scheme}: add one to credentials()`);
    // ApiKeyHeader's other spelling, which its description offers: `Authorization: ApiKey <key>`.
    const spelled = scheme === 'ApiKeyHeader' ? [{ scheme: 'ApiKeyHeader as Authorization: ApiKey', headers: { authorization: `ApiKey ${key}` } }] : [];
    return [{ scheme, ...c }, ...spelled];
  });
}

function call(app: Awaited<ReturnType<typeof buildShared>>, op: Operation, ids: Record<string, string>, cred: Credential) {
  const url = urlOf(op, ids) + (cred.query ? `?${cred.query}` : '');
  const body = op.body;
  if (!body) return app.inject({ method: op.method as 'GET', url, headers: cred.headers });
  return app.inject({
    method: op.method as 'GET',
    url,
    headers: { ...cred.headers, 'content-type': body.contentType },
    payload: typeof body.value === 'string' ? body.value : JSON.stringify(body.value),
  });
}

describe('B tenant isolation', async () => {
  const app = await buildShared();
  const { a, b } = await workspaces(app);
  const started = await app.inject({ method: 'POST', url: '/v1/auth/chatapp/start', headers: { 'x-api-key': b.loginKey }, payload: {} });
  const bSubscribeToken: string = started.json().subscribeToken;

  afterAll(() => {
    console.log(
      `B1 tenant-isolation sweep: ${covered.size} of ${ops.length} operations with a path id covered (${calls} calls with B's credentials); public, checked elsewhere: ${Object.keys(PUBLIC).join(', ')}`,
    );
  });

  it('B1 every path parameter of the documents has a creator, every public exception exists', () => {
    const missing = [...new Set(ops.flatMap((op) => op.keys.filter((k) => !CREATORS[k]).map((k) => `${k} (${op.operationId})`)))];
    expect(missing, 'add a creator to test/security/creators.ts').toEqual([]);
    const ids = new Set(ops.map((op) => op.operationId));
    expect(Object.keys(PUBLIC).filter((id) => !ids.has(id))).toEqual([]);
    expect(Object.keys(BOUND).filter((id) => !ids.has(id))).toEqual([]);
    expect(ops.filter((op) => BOUND[op.operationId]).every((op) => op.schemes.length > 0)).toBe(true);
    expect(ops.filter((op) => PUBLIC[op.operationId]).every((op) => op.schemes.length === 0)).toBe(true);
    expect(swept.every((op) => op.schemes.length > 0)).toBe(true);
  });

  for (const op of swept) {
    (KNOWN_BUGS[op.operationId] ? it.fails : it)(
      `B1 ${op.method} ${op.path} (${op.operationId}) with B's credential on A's id: 404 as for an unknown id, nothing changed`,
      async () => {
        const ids: Record<string, string> = {};
        for (const [i, name] of op.params.entries()) ids[name] = await CREATORS[op.keys[i]!]!({ app, w: a, ids });
        await quiesce(app);
        const unknown = Object.fromEntries(Object.entries(ids).map(([k, v]) => [k, lookalike(v)]));
        for (const cred of credentials(op, b, bSubscribeToken)) {
          const before = await contentDigest(app);
          const res = await expectNoChange(app, () => call(app, op, ids, cred));
          expect(changedTables(before, await contentDigest(app)), `${cred.scheme}: rows changed`).toEqual([]);
          expectProblem(res, 404, 'not-found');
          const none = await call(app, op, unknown, cred);
          expectProblem(none, 404, 'not-found');
          expect(normalized(res.body, ids), cred.scheme).toEqual(normalized(none.body, unknown));
          calls += 2;
        }
        covered.add(op.operationId);
      },
    );
  }

  it('B8 malformed, 500-character and %00 ids in every id position: 400 or 404 problems, never 500, nothing changed', async () => {
    const bad = ['abc', 'x'.repeat(500), 'abc%00', '%00'];
    let tried = 0;
    await expectNoChange(app, async () => {
      for (const op of swept) {
        const cred = credentials(op, b, bSubscribeToken)[0]!;
        for (const name of op.params) {
          for (const value of bad) {
            const ids = Object.fromEntries(op.params.map((p) => [p, lookalike('ab_cdefghijklmnopqrstu')]));
            const path = op.path.replace(/\{(\w+)\}/g, (_, p: string) => (p === name ? value : encodeURIComponent(ids[p]!)));
            const res = await app.inject({
              method: op.method as 'GET',
              url: path + (cred.query ? `?${cred.query}` : ''),
              headers: { ...cred.headers, ...(op.body ? { 'content-type': op.body.contentType } : {}) },
              ...(op.body ? { payload: typeof op.body.value === 'string' ? op.body.value : JSON.stringify(op.body.value) } : {}),
            });
            expect([400, 404], `${op.operationId} ${name}=${value.slice(0, 20)}: ${res.body}`).toContain(res.statusCode);
            expectProblem(res, res.statusCode, res.statusCode === 400 ? 'validation' : 'not-found');
            tried++;
          }
        }
      }
    });
    expect(tried).toBeGreaterThan(200);
  });

  const make = (key: string, w: Workspace) => CREATORS[key]!({ app, w, ids: {} });
  const get = (url: string, headers: Record<string, string>) => app.inject({ url, headers });

  it("B2 A's ids as query filters with B's credential: 404 as for an unknown id", async () => {
    const contact = await make('messaging:contacts/id', a);
    const doc = await make('connect:documentId', a);
    const client = await make('connect:clientId', a);
    const filters: [string, string, Record<string, string>][] = [
      ['/api/chatapp/messages?contact_id=', contact, b.headers],
      ['/api/automation/flw_00000000000000000000/executions?contact_id=', contact, b.headers],
      ...['automation', 'chatbots', 'message-bots', 'forms', 'sequences', 'templates', 'kanban-funnels'].map((c): [string, string, Record<string, string>] => [
        `/api/${c}?waba_id=`,
        a.wabaId,
        b.headers,
      ]),
      ['/api/connect/links?document_id=', doc, { authorization: b.connect }],
      ['/api/connect/grants?client_id=', client, { authorization: b.owner }],
    ];
    for (const [url, id, headers] of filters) {
      const res = await expectNoChange(app, () => get(url + encodeURIComponent(id), headers));
      expectProblem(res, 404, 'not-found');
      const unknown = lookalike(id);
      const none = await get(url + encodeURIComponent(unknown), headers);
      expectProblem(none, 404, 'not-found');
      expect(normalized(res.body, { id }), url).toEqual(normalized(none.body, { id: unknown }));
    }
  });

  it("B3 A's ids in B's bodies (sender number, campaign contacts, agent, template, business account): 404 or 422, nothing changed", async () => {
    const contact = await make('messaging:contacts/id', a);
    const bChat = await make('messaging:chatId', b);
    const aTemplate = (await storeTemplate(app, a, { name: `a_only_${base62(6).toLowerCase()}`, components: [{ type: 'BODY', text: 'Hi' }] })).id;
    const bHook = await make('messaging:ecommerce-webhook/id', b);
    const bodies: [string, unknown][] = [
      ['/api/chatapp/send', { contact_no: '+4915112345678', chatapp_phone_number: a.number, messageType: 'text', message: 'hi' }],
      [
        '/api/campaigns',
        { name: 'x', chatapp_phone_number: b.number, audience: { type: 'contacts', contact_ids: [contact] }, template: { name: 'welcome', language: 'en_US' } },
      ],
      ['/api/chatapp/assign-chat', { chat_id: bChat, agent_id: a.ownerId }],
      [`/api/ecommerce-webhook/${bHook}/map-template`, { event: 'order.paid', template_id: aTemplate, language: 'en_US', variables: [] }],
      [
        '/api/automation',
        {
          name: 'x',
          waba_id: a.wabaId,
          triggers: [{ id: 't', type: 'message_received', parameters: {} }],
          nodes: [{ id: 'n', type: 'send_text', parameters: { text: 'x' } }],
          connections: [{ from_node: 't', to_node: 'n' }],
        },
      ],
      ['/api/chatbots', { name: 'x', waba_id: a.wabaId, fallback: { action: 'reply', text: 'x' } }],
    ];
    for (const [url, payload] of bodies) {
      const res = await expectNoChange(app, () => app.inject({ method: 'POST', url, headers: b.headers, payload: payload as object }));
      expect([404, 422], `${url}: ${res.body}`).toContain(res.statusCode);
      expectProblem(res, res.statusCode, res.statusCode === 404 ? 'not-found' : res.json().type.split('/').pop());
    }
  });

  it("B4 a Connect body naming org_id, organization_id or tenant_id of B with A's token: 400 validation, nothing created", async () => {
    const doc = await make('connect:documentId', a);
    for (const field of ['org_id', 'organization_id', 'tenant_id']) {
      const payload = { document_id: doc, external_id: 'crm-b4', recipient: { phone: '+4915112345678' }, [field]: b.workspaceId };
      const res = await expectNoChange(app, () => app.inject({ method: 'POST', url: '/api/connect/links', headers: { authorization: a.connect }, payload }));
      expect(expectProblem(res, 400, 'validation').errors[0].pointer).toBe(`/body/${field}`);
    }
  });

  it("B5 lists and searches with both workspaces populated: only B's rows, totals exclude A", async () => {
    const name = `Zed${base62(8)}`;
    await app.inject({ method: 'POST', url: '/api/contacts', headers: a.headers, payload: { name, contact_no: '+4915112340001' } });
    const mine = await app.inject({ method: 'POST', url: '/api/contacts', headers: b.headers, payload: { name: `${name}b`, contact_no: '+4915112340002' } });
    const res = await get(`/api/contacts?q=${name}`, b.headers);
    expect(res.statusCode).toBe(200);
    const page = res.json();
    expect(page.data.map((c: { id: string }) => c.id)).toEqual([mine.json().id]);
    if ('total' in page) expect(page.total).toBe(1);
    const docs = (await get('/api/connect/documents?limit=100', { authorization: b.connect })).json().data as { id: string }[];
    const aDocs = await app.platform.store.db.selectFrom('documents').select('id').where('workspace_id', '=', a.workspaceId).execute();
    expect(aDocs.length).toBeGreaterThan(0);
    expect(docs.filter((d) => aDocs.some((x) => x.id === d.id))).toEqual([]);
  });

  it("B6 B's list call with a cursor of A's listing: 400 validation, never A's rows", async () => {
    for (let i = 0; i < 2; i++) await make('messaging:contacts/id', a);
    for (const [url, ah, bh] of [
      ['/api/contacts?limit=1', a.headers, b.headers],
      ['/api/connect/documents?limit=1', { authorization: a.connect }, { authorization: b.connect }],
    ] as const) {
      const cursor = (await get(url, ah)).json().next_cursor;
      expect(cursor, url).toBeTruthy();
      const res = await get(`${url}&cursor=${encodeURIComponent(cursor)}`, bh);
      expectProblem(res, 400, 'validation');
    }
  });

  it("B7 a revoked link's page: 410 HTML; a download without permission: 403; no reader session, no event", async () => {
    const link = await app.inject({
      method: 'POST',
      url: '/api/connect/links',
      headers: { authorization: a.connect },
      payload: { document_id: await make('connect:documentId', a), external_id: 'b7', recipient: { phone: '+4915112345678' } },
    });
    const slug = new URL(link.json().url).pathname.split('/').pop()!;
    await quiesce(app); // events of A's own changes (link created, revoked) are not the reader's doing
    const download = await expectNoChange(app, () => get(`/l/${slug}/file?download=1`, {}));
    expect(download.statusCode).toBe(403);
    expect(String(download.headers['content-type'])).toMatch(/^text\/html/); // the viewer's page (bad-inputs M9)
    await app.inject({ method: 'POST', url: `/api/connect/links/${link.json().id}/revoke`, headers: { authorization: a.connect } });
    await quiesce(app);
    const page = await expectNoChange(app, () => get(`/l/${slug}`, {}));
    expect(page.statusCode).toBe(410);
    expect(String(page.headers['content-type'])).toMatch(/^text\/html/);
  });

  it('B1 the sweep covered every operation with a path id but the public ones', () => {
    expect(swept.length).toBeGreaterThan(50);
    expect([...covered].sort()).toEqual(
      swept
        .filter((op) => !KNOWN_BUGS[op.operationId])
        .map((op) => op.operationId)
        .sort(),
    );
  });
});
