// Group J of the catalogue: injection and output encoding. Values are stored and compared as
// text, pages escape what users named, headers never split, prototype keys are refused.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { buildApp } from '#server/app.js';
import { issueOwnerToken } from '#server/auth/owner-jwt.js';
import { loadConfig } from '#server/config.js';
import { buildShared } from '../helper.js';
import { openTestStore } from '../support/store.js';
import { multipart, pdf } from '../unit/connect/content/support.js';
import { customerWrites, sandbox } from '../unit/messaging/inbox/support.js';
import { expectNoChange, expectNoLeak, expectProblem, inboundSettled, workspace } from './support.js';

const XSS = '<img src=x onerror=alert(1)>';
const SQL = ["' OR 1=1--", "'; DROP TABLE contacts;--", '\\', '%', '_'];

/** No element from the value, and a CSP without inline script. */
function expectEscaped(res: { statusCode: number; body: string; headers: Record<string, unknown> }, what: string) {
  expect(res.statusCode, `${what}: ${res.body.slice(0, 300)}`).toBe(200);
  expect(res.body, what).not.toContain('<img');
  expect(res.body, what).toContain('&lt;img src=x onerror=alert(1)&gt;');
  const csp = String(res.headers['content-security-policy'] ?? '');
  expect(csp, what).toMatch(/script-src|default-src/);
  expect(csp, what).not.toMatch(/script-src[^;]*'unsafe-inline'/);
}

describe('J injection and output encoding', async () => {
  const app = await buildShared();
  const w = await workspace(app);
  const connect = { authorization: w.connect };
  const browserToken = (await issueOwnerToken(app.platform, { workspaceId: w.workspaceId, ownerId: w.ownerId }, 'owner-browser')).token;
  const cookie = `owner_session=${app.signCookie(browserToken)}`;

  it('J1 SQL and wildcard characters in searches and filters are text: no 500, % matches a literal %', async () => {
    for (const name of ['100% sure', '100 sure', 'a_b', 'axb']) {
      await app.inject({
        method: 'POST',
        url: '/api/contacts',
        headers: w.headers,
        payload: { name, contact_no: `+49151${Math.floor(1e7 + Math.random() * 9e7)}` },
      });
    }
    for (const value of SQL) {
      for (const url of [
        `/api/contacts?q=${encodeURIComponent(value)}`,
        `/api/contacts?tag=${encodeURIComponent(value)}`,
        `/api/connect/links?external_id=${encodeURIComponent(value)}`,
        `/api/quick-replies?search=${encodeURIComponent(value)}`,
      ]) {
        const res = await app.inject({ url, headers: url.includes('connect') ? connect : w.headers });
        expect(res.statusCode, `${url}: ${res.body}`).toBeLessThan(500);
        expectNoLeak(res.body);
      }
    }
    const names = async (q: string) =>
      ((await app.inject({ url: `/api/contacts?q=${encodeURIComponent(q)}`, headers: w.headers })).json().data as { name: string }[]).map((c) => c.name);
    expect(await names('0% s')).toEqual(['100% sure']);
    expect(await names('a_b')).toEqual(['a_b']);
    expect(await app.platform.store.db.selectFrom('contacts').select('id').where('workspace_id', '=', w.workspaceId).execute()).toHaveLength(4);
  });

  it('J2 sort naming something off the list (name;DROP, password_hash): 400', async () => {
    for (const sort of ['name;DROP', 'password_hash', 'name desc; select 1']) {
      const res = await expectNoChange(app, () => app.inject({ url: `/api/contacts?sort=${encodeURIComponent(sort)}`, headers: w.headers }));
      expectProblem(res, 400, 'validation');
    }
  });

  it('J3 HTML in document title, client, Login app and workspace names: escaped on the viewer, consent and settings pages', async () => {
    await app.platform.store.db.updateTable('workspaces').set({ name: XSS }).where('id', '=', w.workspaceId).execute();
    const { payload, headers } = multipart({ bytes: pdf(1), title: XSS, filename: `${XSS}.pdf` });
    const doc = (await app.inject({ method: 'POST', url: '/api/connect/documents', headers: { ...connect, ...headers }, payload })).json();
    const link = (
      await app.inject({
        method: 'POST',
        url: '/api/connect/links',
        headers: connect,
        payload: { document_id: doc.id, external_id: XSS, recipient: { email: 'lena@example.com' } },
      })
    ).json();
    expectEscaped(await app.inject({ url: new URL(link.url).pathname }), 'viewer');

    const client = await app.inject({
      method: 'POST',
      url: '/api/connect/clients',
      headers: { authorization: w.owner },
      payload: { name: XSS, redirect_uris: ['https://crm.test/cb'] },
    });
    expect(client.statusCode, client.body).toBe(201);
    await app.inject({ method: 'POST', url: '/api/login/apps', headers: { authorization: w.owner }, payload: { name: XSS } });
    const query = new URLSearchParams({
      client_id: client.json().client_id,
      redirect_uri: 'https://crm.test/cb',
      response_type: 'code',
      scope: 'documents:write',
      state: 's',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
    });
    expectEscaped(await app.inject({ url: `/connect/authorize?${query}`, headers: { cookie } }), 'consent');
    for (const page of ['/account', '/account/connect-clients', '/account/login-apps'])
      expectEscaped(await app.inject({ url: page, headers: { cookie } }), page);
  });

  it('J4 values a page embeds as JSON: <, >, &, U+2028 and U+2029 escaped, no </script> break-out', async () => {
    const value = '</script><script>alert(1)</script>&\u2028\u2029';
    const { payload, headers } = multipart({ bytes: pdf(1), title: value });
    const doc = (await app.inject({ method: 'POST', url: '/api/connect/documents', headers: { ...connect, ...headers }, payload })).json();
    const link = (
      await app.inject({
        method: 'POST',
        url: '/api/connect/links',
        headers: connect,
        payload: { document_id: doc.id, external_id: value, recipient: { email: 'lena@example.com' } },
      })
    ).json();
    const page = await app.inject({ url: new URL(link.url).pathname });
    expect(page.statusCode).toBe(200);
    expect(page.body).not.toContain('</script><script>alert(1)');
    expect(page.body).not.toMatch(/[\u2028\u2029]/);
    expect((page.body.match(/<script/g) ?? []).length).toBeLessThanOrEqual(1);
  });

  it('J5 CR/LF in values reaching headers (state, redirect URI, file name): no header split, never 500', async () => {
    const crlf = '%0d%0aSet-Cookie: x=1';
    const res = await app.inject({
      url: `/connect/authorize?client_id=cli_x&redirect_uri=https://crm.test/cb${crlf}&response_type=code&state=a${crlf}`,
      headers: { cookie },
    });
    expect(res.statusCode).toBeLessThan(500);
    expect(JSON.stringify(res.headers)).not.toMatch(/x=1/);
    const { payload, headers } = multipart({ bytes: pdf(1), filename: 'a\r\nSet-Cookie: x=1.pdf' });
    const up = await app.inject({ method: 'POST', url: '/api/connect/documents', headers: { ...connect, ...headers }, payload });
    expect(up.statusCode).toBeLessThan(500);
    if (up.statusCode === 201) {
      const link = (
        await app.inject({
          method: 'POST',
          url: '/api/connect/links',
          headers: connect,
          payload: { document_id: up.json().id, external_id: 'j5', recipient: { email: 'l@example.com' }, allow_download: true },
        })
      ).json();
      const file = await app.inject({ url: `${new URL(link.url).pathname}/file?download=1` });
      expect(file.statusCode).toBeLessThan(500);
      expect(file.headers['set-cookie']).toBeUndefined();
    }
  });

  it('J6 __proto__ and constructor.prototype in JSON: 400; in query and form bodies ignored; Object.prototype untouched', async () => {
    for (const raw of [
      '{"contact_no":"+4915112340010","__proto__":{"polluted":1}}',
      '{"contact_no":"+4915112340011","constructor":{"prototype":{"polluted":1}}}',
      '{"contact_no":"+4915112340012","custom_fields":{"__proto__":{"polluted":1}}}',
    ]) {
      const res = await expectNoChange(app, () =>
        app.inject({ method: 'POST', url: '/api/contacts', headers: { ...w.headers, 'content-type': 'application/json' }, payload: raw }),
      );
      expectProblem(res, 400, 'malformed-body');
    }
    const q = await app.inject({ url: '/api/contacts?__proto__[polluted]=1&constructor[prototype][polluted]=1', headers: w.headers });
    expect(q.statusCode).toBeLessThan(500);
    const form = await app.inject({
      method: 'POST',
      url: '/api/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: '__proto__[polluted]=1&grant_type=authorization_code&code=x',
    });
    expect(form.statusCode).toBeLessThan(500);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('J7 template-like text ({{1}}, {{contact.phone}}, ${process.env.X}) is sent literally, never expanded', async () => {
    const spy = vi.spyOn(sandbox(app), 'sendMessage');
    await customerWrites(app, w, '+4915112340020');
    await inboundSettled(app);
    const message = '{{1}} {{contact.phone}} ${process.env.HOME} #{1+1}';
    const res = await app.inject({
      method: 'POST',
      url: '/api/chatapp/send',
      headers: w.headers,
      payload: { contact_no: '+4915112340020', chatapp_phone_number: w.number, messageType: 'text', message },
    });
    expect(res.statusCode, res.body).toBeLessThan(300);
    expect(JSON.stringify(spy.mock.calls.at(-1)?.[2])).toContain(JSON.stringify(message).slice(1, -1));
    spy.mockRestore();
  });

  it('J8 newlines and ANSI escapes in User-Agent and the URL: one JSON line per log entry', async () => {
    // The app's own logger (buildApp's logging stream), at info, so request lines are written.
    const lines: string[] = [];
    const dataDir = mkdtempSync(join(tmpdir(), 'j8-'));
    const store = await openTestStore();
    const logged = await buildApp(
      loadConfig({ PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'info', DEMO: 'false' }),
      { sandboxTestMode: true, store },
      { stream: { write: (line) => void lines.push(line) } },
    );
    try {
      await logged.ready();
      const hostile = 'evil\r\n{"level":60,"msg":"forged"}\u001b[31m';
      await logged.inject({ url: '/api/contacts?x=%0d%0a%7B%22level%22%3A60%7D', headers: { 'user-agent': hostile, 'x-api-key': 'nope\u001b[0m' } });
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) {
        expect(line.replace(/\n$/, '')).not.toMatch(/[\r\n\u001b]/);
        expect(() => JSON.parse(line)).not.toThrow();
      }
      expect(lines.filter((l) => JSON.parse(l).msg === 'forged')).toEqual([]);
    } finally {
      await logged.close();
      await store.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 180_000);
});
