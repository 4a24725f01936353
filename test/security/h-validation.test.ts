// Group H of the catalogue: validation. Each refusal is a 400 (or 413/415/422) problem that
// names the field, and changes nothing. Most cases run against POST /api/contacts and
// POST /api/chatapp/send, the two bodies every Messaging user sends first. Added: bad-inputs H16
// (the fields of issue 41: opt-out confirmations, flow priority, the pn_ sender, the typing indicator).
import { describe, expect, it, vi } from 'vitest';
import { buildShared } from '../helper.js';
import { customerWrites, sandbox, storeTemplate } from '../unit/messaging/inbox/support.js';
import { inbound, postInbound, textMessage } from './inbound.js';
import { expectNoChange, expectProblem, inboundSettled, workspace } from './support.js';

const pointers = (body: { errors?: { pointer: string }[] }) => (body.errors ?? []).map((e) => e.pointer);

describe('H validation', async () => {
  const app = await buildShared();
  const w = await workspace(app);
  const post = (url: string, payload: unknown, headers: Record<string, string> = {}) =>
    app.inject({
      method: 'POST',
      url,
      headers: { ...w.headers, 'content-type': 'application/json', ...headers },
      payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
    });
  const text = (extra: Record<string, unknown> = {}) => ({
    contact_no: '+4915112345678',
    chatapp_phone_number: w.number,
    messageType: 'text',
    message: 'Hi',
    ...extra,
  });
  /** A refusal: status and type, nothing changed; answers the problem body. */
  const refused = async (url: string, payload: unknown, status = 400, type = 'validation', headers: Record<string, string> = {}) =>
    expectProblem(await expectNoChange(app, () => post(url, payload, headers)), status, type);

  it('H1 wrong types (message: 42, latitude: "1.5", enabled: "true", name: 7): 400 per field, never coerced', async () => {
    expect(pointers(await refused('/api/chatapp/send', text({ message: 42 })))).toContain('/body/message');
    const loc = { ...text(), messageType: 'location', message: undefined, location: { latitude: '1.5', longitude: 13.4 } };
    expect(pointers(await refused('/api/chatapp/send', loc))).toContain('/body/location/latitude');
    expect(pointers(await refused('/api/contacts', { contact_no: '+4915112345670', name: 7 }))).toContain('/body/name');
    const put = await expectNoChange(app, () =>
      app.inject({
        method: 'PUT',
        url: `/api/chatapp/${w.wabaId}/marketing-messages`,
        headers: w.headers,
        payload: { enabled: 'true', product_policy: 'STRICT' },
      }),
    );
    expect(pointers(expectProblem(put, 400, 'validation'))).toContain('/body/enabled');
  });

  it('H2 each required field missing in turn: 400 naming it', async () => {
    for (const field of ['contact_no', 'chatapp_phone_number', 'messageType']) {
      const body: Record<string, unknown> = text();
      delete body[field];
      const problem = await refused('/api/chatapp/send', body);
      expect(JSON.stringify(problem.errors), field).toContain(field);
    }
    expect(JSON.stringify((await refused('/api/contacts', { name: 'Lena' })).errors)).toContain('contact_no');
  });

  it('H3 an unknown property (isAdmin): 400 naming it, never stripped', async () => {
    expect(pointers(await refused('/api/contacts', { contact_no: '+4915112345671', isAdmin: true }))).toContain('/body/isAdmin');
    expect(pointers(await refused('/api/chatapp/send', text({ isAdmin: true })))).toContain('/body/isAdmin');
  });

  it('H4 an enum off the list (messageType sms, product_policy strict): 400 listing the allowed values', async () => {
    const problem = await refused('/api/chatapp/send', text({ messageType: 'sms' }));
    expect(JSON.stringify(problem.errors)).toMatch(/text/);
    const put = await expectNoChange(app, () =>
      app.inject({
        method: 'PUT',
        url: `/api/chatapp/${w.wabaId}/marketing-messages`,
        headers: w.headers,
        payload: { enabled: true, product_policy: 'strict' },
      }),
    );
    expect(JSON.stringify(expectProblem(put, 400, 'validation').errors)).toMatch(/STRICT/);
  });

  it('H5 invalid phones: 400 /body/contact_no; valid ones in any layout stored as E.164', async () => {
    for (const phone of ['12345', '+1555', '+2710508', '+999999999999999999', '+1-555-0100-abc']) {
      expect(pointers(await refused('/api/contacts', { contact_no: phone })), phone).toContain('/body/contact_no');
    }
    for (const [layout, e164] of [
      ['+49 151 2345 6001', '+4915123456001'],
      ['+49 (151) 2345-6002', '+4915123456002'],
    ]) {
      const res = await post('/api/contacts', { contact_no: layout });
      expect(res.statusCode, res.body).toBe(201);
      expect(res.json().contact_no).toBe(e164);
    }
  });

  it('H16 a national number not valid in the workspace’s country (030 1234567 in a US workspace), or valid nowhere (+10301234567): 400 /body/contact_no', async () => {
    // The workspace's number is a +1 555 sandbox number: national numbers are read as US ones.
    for (const phone of ['030 1234567', '+10301234567', '(030) 123-4567']) {
      const body = await refused('/api/contacts', { contact_no: phone });
      expect(body.errors, phone).toEqual([{ pointer: '/body/contact_no', detail: expect.stringMatching(/^is not a valid phone number/) }]);
    }
    const res = await post('/api/contacts', { contact_no: '(617) 555-9031' });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().contact_no).toBe('+16175559031');
  });

  it('H6 a 100,000-character name; 10,000 tags: 400 (maxLength, maxItems), never truncated', async () => {
    expect(pointers(await refused('/api/contacts', { contact_no: '+4915112345672', name: 'x'.repeat(100_000) }))).toContain('/body/name');
    const tags = Array.from({ length: 10_000 }, (_, i) => `t${i}`);
    expect(pointers(await refused('/api/contacts', { contact_no: '+4915112345673', tags }))).toContain('/body/tags');
  });

  // The flow validator refuses parameters nested deeper than 32 levels (walked iteratively).
  it('H7 JSON nested 10,000 deep in a flow node parameters: 400 or 413, no stack overflow', async () => {
    const deep = `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`;
    const raw = `{"name":"deep","waba_id":"${w.wabaId}","triggers":[{"id":"t","type":"message_received","parameters":{}}],"nodes":[{"id":"n","type":"send_text","parameters":${deep}}],"connections":[]}`;
    const res = await expectNoChange(app, () => post('/api/automation', raw));
    expect([400, 413], res.body).toContain(res.statusCode);
    expectProblem(res, res.statusCode, res.statusCode === 413 ? 'payload-too-large' : res.json().type.split('/').pop());
  });

  it('H8 NUL and a lone surrogate: 400; U+202E, zero-width, combining marks and emoji round-trip byte-exact', async () => {
    for (const bad of ['a\u0000b', 'a\ud800b']) {
      expect(pointers(await refused('/api/contacts', { contact_no: '+4915112345674', name: bad }))).toContain('/body/name');
    }
    const name = 'Le\u202Ena\u200B e\u0301 😀 👩🏽‍💻';
    const res = await post('/api/contacts', { contact_no: '+4915112345675', name });
    expect(res.statusCode, res.body).toBe(201);
    const got = await app.inject({ url: `/api/contacts/${res.json().id}`, headers: w.headers });
    expect(Buffer.from(got.json().name)).toEqual(Buffer.from(name));
  });

  it('H8 NUL in any API: body and query answer 400 naming the place (schemathesis found 500s on key and client names)', async () => {
    const send = (method: 'POST' | 'GET', url: string, auth: string | Record<string, string>, payload?: unknown) =>
      expectNoChange(app, () =>
        app.inject({
          method,
          url,
          headers: { ...(typeof auth === 'string' ? { authorization: auth } : auth), ...(payload ? { 'content-type': 'application/json' } : {}) },
          ...(payload ? { payload: JSON.stringify(payload) } : {}),
        }),
      );
    const cases = [
      [await send('POST', '/api/account/api-keys', w.owner, { name: 'a\u0000b', kind: 'messaging', scopes: ['messaging:read'] }), '/body/name'],
      [
        await send('POST', '/api/connect/clients', w.owner, { name: 'a\u0000b', client_type: 'confidential', redirect_uris: ['https://crm.example/cb'] }),
        '/body/name',
      ],
      [
        await send('POST', '/api/connect/clients', w.owner, { name: 'ok', client_type: 'confidential', redirect_uris: ['https://crm.example/cb\ud800'] }),
        '/body/redirect_uris/0',
      ],
      [await send('GET', '/api/contacts?q=a%00b', w.headers), '/query/q'],
    ] as const;
    for (const [res, pointer] of cases) expect(pointers(expectProblem(res, 400, 'validation')), res.body).toContain(pointer);
  });

  it("H8 the provider's signed webhook is not refused for NUL or a lone surrogate: the text is stored with U+FFFD", async () => {
    const res = await postInbound(app, inbound(w, [textMessage('wamid.H8nul', 'a\u0000b\ud800c')]));
    expect(res.statusCode, res.body).toBe(200);
    const row = await app.platform.store.db
      .selectFrom('messages')
      .select(['id', 'content'])
      .where('provider_message_id', '=', 'wamid.H8nul')
      .executeTakeFirstOrThrow();
    expect(JSON.stringify(row.content)).toContain('a\ufffdb\ufffdc');
    expect(await inboundSettled(app)).toBe(true);
  });

  it('H9 limit -1, 0, 1.5, abc, 10^9: 400; without limit the default page', async () => {
    for (const limit of ['-1', '0', '1.5', 'abc', '1000000000']) {
      const res = await expectNoChange(app, () => app.inject({ url: `/api/contacts?limit=${limit}`, headers: w.headers }));
      expect(pointers(expectProblem(res, 400, 'validation')), limit).toContain('/query/limit');
    }
    const res = await app.inject({ url: '/api/contacts', headers: w.headers });
    expect(res.statusCode).toBe(200);
  });

  it('H10 a random, truncated or edited cursor: 400', async () => {
    for (let i = 0; i < 3; i++) await post('/api/contacts', { contact_no: `+49151777000${i}` });
    const cursor: string = (await app.inject({ url: '/api/contacts?limit=1', headers: w.headers })).json().next_cursor;
    expect(cursor).toBeTruthy();
    const edited = cursor.slice(0, 4) + (cursor[4] === 'A' ? 'B' : 'A') + cursor.slice(5);
    for (const bad of ['bm90LWEtY3Vyc29y', cursor.slice(0, -3), edited]) {
      const res = await expectNoChange(app, () => app.inject({ url: `/api/contacts?limit=1&cursor=${encodeURIComponent(bad)}`, headers: w.headers }));
      expectProblem(res, 400, 'validation');
    }
  });

  it('H11 duplicate keys: last wins, and the validator and the handler see the same value', async () => {
    // Documented choice: JSON.parse semantics (RFC 8259 leaves duplicates to the parser). The
    // text-then-location body validates as location (needs `location`), so it is refused; the
    // reverse validates and is sent as text: one parsed object for both.
    const base = `"contact_no":"+4915112345678","chatapp_phone_number":"${w.number}","message":"Hi"`;
    const refusedAsLocation = await refused('/api/chatapp/send', `{${base},"messageType":"text","messageType":"location"}`);
    expect(JSON.stringify(refusedAsLocation.errors)).toMatch(/location/);
    await customerWrites(app, w, '+4915112345678');
    expect(await inboundSettled(app)).toBe(true);
    const sent = await post('/api/chatapp/send', `{${base},"messageType":"location","messageType":"text"}`);
    expect(sent.statusCode, sent.body).toBeLessThan(300);
  });

  it('H12 text/plain or no Content-Type with JSON: 415; empty body, null, [], 1: 400', async () => {
    const body = JSON.stringify({ contact_no: '+4915112345676' });
    const plain = await expectNoChange(app, () =>
      app.inject({ method: 'POST', url: '/api/contacts', headers: { ...w.headers, 'content-type': 'text/plain' }, payload: body }),
    );
    expectProblem(plain, 415, 'unsupported-media-type');
    const utf16 = await expectNoChange(app, () =>
      app.inject({ method: 'POST', url: '/api/contacts', headers: { ...w.headers, 'content-type': 'application/json; charset=utf-16' }, payload: body }),
    );
    expectProblem(utf16, 415, 'unsupported-media-type');
    const utf8 = await app.inject({
      method: 'POST',
      url: '/api/contacts',
      headers: { ...w.headers, 'content-type': 'application/json; charset=utf-8' },
      payload: JSON.stringify({ contact_no: '+4915112345675' }),
    });
    expect(utf8.statusCode, utf8.body).toBe(201);
    const none = await expectNoChange(app, () => app.inject({ method: 'POST', url: '/api/contacts', headers: w.headers, payload: Buffer.from(body) }));
    expect([400, 415]).toContain(none.statusCode);
    expectProblem(none, none.statusCode, none.statusCode === 415 ? 'unsupported-media-type' : 'malformed-body');
    const empty = await expectNoChange(app, () => post('/api/contacts', ''));
    expectProblem(empty, 400, empty.json().type.endsWith('validation') ? 'validation' : 'malformed-body');
    for (const value of ['null', '[]', '1']) expectProblem(await expectNoChange(app, () => post('/api/contacts', value)), 400, 'validation');
  });

  it('H13 bodyLimit + 1 bytes, with Content-Length and chunked: 413 payload-too-large', async () => {
    const big = JSON.stringify({ contact_no: '+4915112345677', name: 'x'.repeat(app.initialConfig.bodyLimit!) });
    expectProblem(await expectNoChange(app, () => post('/api/contacts', big)), 413, 'payload-too-large');
    const { Readable } = await import('node:stream');
    const chunked = await expectNoChange(app, () =>
      app.inject({
        method: 'POST',
        url: '/api/contacts',
        headers: { ...w.headers, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
        payload: Readable.from([Buffer.from(big)]),
      }),
    );
    expectProblem(chunked, 413, 'payload-too-large');
  });

  it('H14 rule violations (latitude 200, image without mediaUrl, past schedule, unknown node type, edge to nowhere, 2026-02-30): 400 or 422 naming the field', async () => {
    await storeTemplate(app, w, { name: 'welcome', category: 'MARKETING', components: [{ type: 'BODY', text: 'Welcome' }] });
    const cases: [string, unknown, string][] = [
      [
        '/api/chatapp/send',
        { ...text(), messageType: 'location', message: undefined, location: { latitude: 200, longitude: 13.4 } },
        '/body/location/latitude',
      ],
      ['/api/chatapp/send', { ...text(), messageType: 'image', message: undefined }, 'mediaUrl'],
      [
        '/api/campaigns',
        {
          name: 'x',
          chatapp_phone_number: w.number,
          audience: { type: 'all_contacts' },
          template: { name: 'welcome', language: 'en_US' },
          scheduled_at: '2020-01-01T00:00:00Z',
        },
        'scheduled_at',
      ],
      [
        '/api/campaigns',
        {
          name: 'x',
          chatapp_phone_number: w.number,
          audience: { type: 'all_contacts' },
          template: { name: 'welcome', language: 'en_US' },
          scheduled_at: '2026-02-30T08:00:00Z',
        },
        'scheduled_at',
      ],
      [
        '/api/automation',
        {
          name: 'x',
          waba_id: w.wabaId,
          triggers: [{ id: 't', type: 'message_received', parameters: {} }],
          nodes: [{ id: 'n', type: 'teleport', parameters: {} }],
          connections: [],
        },
        'type',
      ],
      [
        '/api/automation',
        {
          name: 'x',
          waba_id: w.wabaId,
          triggers: [{ id: 't', type: 'message_received', parameters: {} }],
          nodes: [{ id: 'n', type: 'send_text', parameters: { text: 'x' } }],
          connections: [{ from_node: 't', to_node: 'nowhere' }],
        },
        'connections',
      ],
    ];
    for (const [url, payload, field] of cases) {
      const res = await expectNoChange(app, () => post(url, payload));
      expect([400, 422], `${url} ${field}: ${res.body}`).toContain(res.statusCode);
      expect(String(res.headers['content-type'])).toMatch(/^application\/problem\+json/);
      expect(JSON.stringify(res.json().errors ?? res.json().detail), field).toContain(field);
    }
  });

  it('H15 free-form text 24 h + 1 s after the last inbound: 422 outside-window, 0 provider calls; at 23 h 59 min it is sent', async () => {
    const spy = vi.spyOn(sandbox(app), 'sendMessage');
    const sends = () => spy.mock.calls.length;
    await customerWrites(app, w, '+4915112349001', 'Hello', 24 * 3_600_000 + 1_000);
    expect(await inboundSettled(app)).toBe(true);
    const res = await expectNoChange(app, () => post('/api/chatapp/send', text({ contact_no: '+4915112349001' })), { probes: { sends } });
    const problem = expectProblem(res, 422, 'outside-window');
    expect(problem.detail).toMatch(/template/i);
    await customerWrites(app, w, '+4915112349002', 'Hello', 23 * 3_600_000 + 59 * 60_000);
    const ok = await post('/api/chatapp/send', text({ contact_no: '+4915112349002' }));
    expect(ok.statusCode, ok.body).toBeLessThan(300);
    expect(sends()).toBe(1);
    spy.mockRestore();
  });

  it('H17 the new fields of issue 41: confirmation texts blank (422) or too long, a flow priority out of range or not an integer, a sender id of another form (400); a foreign pn_ sender or chat (404)', async () => {
    const put = (payload: unknown) =>
      app.inject({
        method: 'PUT',
        url: '/api/opt-out-settings',
        headers: { ...w.headers, 'content-type': 'application/json' },
        payload: JSON.stringify(payload),
      });
    const other = await workspace(app);
    const flow = {
      name: 'F',
      waba_id: w.wabaId,
      triggers: [{ id: 't', type: 'message_received', parameters: {} }],
      nodes: [{ id: 'n', type: 'send_text', parameters: { text: 'x' } }],
      connections: [{ from_node: 't', to_node: 'n' }],
    };
    await expectNoChange(app, async () => {
      expect(pointers(expectProblem(await put({ opt_out_confirmation: ' \t ' }), 422, 'unprocessable'))).toEqual(['/body/opt_out_confirmation']);
      expectProblem(await put({ opt_in_confirmation: 'x'.repeat(1025) }), 400, 'validation');
      expectProblem(await put({ opt_in_confirmation: '' }), 400, 'validation');
      expectProblem(await put({ confirmation: 'true' }), 400, 'validation'); // no coercion
      for (const priority of [1001, -1001, 1.5, '10', null]) expectProblem(await post('/api/automation', { ...flow, priority }), 400, 'validation');
      for (const sender of ['pn_../../x', 'pn_', 'PN_3Rt8Yu2WqE6pLkAbCd', 'pn_3Rt8Yu2WqE6pLk; drop table']) {
        expect(pointers(expectProblem(await post('/api/chatapp/send', text({ chatapp_phone_number: sender })), 400, 'validation'))).toContain(
          '/body/chatapp_phone_number',
        );
      }
      expectProblem(await post('/api/chatapp/send', text({ chatapp_phone_number: other.pnId })), 404, 'not-found');
      expectProblem(await post('/api/chatapp/chats/chat_00000000000000000000/typing', {}), 404, 'not-found');
    });
  });
});
