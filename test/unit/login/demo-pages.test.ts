// The demo pages: /demo/login (a client site's sign-in with its own backend routes) and
// /sandbox/phone (the simulated phone). Headers (CSP without inline script, no framing),
// escaping, CSRF and origin checks, the API key never reaching the browser, the whole flow
// through the backend routes, and both pages absent when they must be.
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { demoLoginApp, seedDemoWorkspace, type DemoLoginApp } from '#server/demo.js';
import { createSandboxAccount } from '#server/providers/sandbox.js';
import { build, buildShared } from '#test/helper.js';
import { signUp } from '../account/support.js';
import { eventually } from '#test/support/eventually.js';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const JSON_POST = { 'content-type': 'application/json' };

/** Cookies a browser would keep across requests (name → value), updated from each answer. */
class Jar {
  private readonly cookies = new Map<string, string>();
  take(res: LightMyRequestResponse): LightMyRequestResponse {
    for (const c of res.cookies as { name: string; value: string; maxAge?: number; expires?: Date }[]) {
      const cleared = c.maxAge === 0 || (c.expires && c.expires.getTime() <= Date.now()) || c.value === '';
      if (cleared) this.cookies.delete(c.name);
      else this.cookies.set(c.name, c.value);
    }
    return res;
  }
  get header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
  has(name: string): boolean {
    return this.cookies.has(name);
  }
}

function meta(body: string, name: string): string {
  const match = new RegExp(`<meta name="${name}" content="([^"]+)">`).exec(body);
  if (!match) throw new Error(`no ${name} meta in the page`);
  return match[1]!;
}

function hidden(body: string, name: string): string {
  const match = new RegExp(`name="${name}" value="([^"]+)"`).exec(body);
  if (!match) throw new Error(`no ${name} field in the page`);
  return match[1]!;
}

function expectPageHeaders(res: LightMyRequestResponse, script: boolean) {
  const csp = String(res.headers['content-security-policy']);
  expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
  expect(csp).toContain("default-src 'none'");
  expect(csp).toContain("frame-ancestors 'none'");
  expect(csp).toContain("base-uri 'none'");
  expect(csp).toContain("form-action 'self'");
  expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|\*|https?:|data:/);
  if (script) expect(csp).toContain("script-src 'self'");
  else expect(csp).not.toContain('script-src');
  expect(res.headers['x-frame-options']).toBe('DENY');
  expect(res.headers['cache-control']).toBe('no-store');
  expect(res.headers['referrer-policy']).toBe('no-referrer');
  expect(res.headers['x-content-type-options']).toBe('nosniff');
  // No inline script or style, no inline event handlers: every <script> has a src.
  expect(res.body).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/);
  expect(res.body).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
  // Nothing from another host.
  expect(res.body).not.toMatch(/(src|href)="(https?:)?\/\/(?!wa\.me)/);
}

describe('demo pages', () => {
  let app: FastifyInstance;
  let demo: DemoLoginApp;
  beforeAll(async () => {
    app = await buildShared({ env: { DEMO: 'true' } });
    await seedDemoWorkspace(app.platform, app);
    demo = (await demoLoginApp(app))!;
  });

  it('the demo workspace has a Login app on the service number, its key stored encrypted only', async () => {
    expect(demo.appId).toMatch(/^app_/);
    expect(demo.apiKey).toMatch(/^lk_live_/);
    const row = await app.platform.store.db.selectFrom('login_apps').selectAll().where('id', '=', demo.appId).executeTakeFirstOrThrow();
    expect(row.use_service_phone).toBe(true);
    const dump = JSON.stringify(await (app.platform.store.db as any).selectFrom('demo_workspaces').selectAll().execute());
    expect(dump).not.toContain(demo.apiKey);
    expect(await demoLoginApp(app)).toEqual(demo); // read back (decrypted), not created again
    expect(await app.platform.store.db.selectFrom('login_apps').select('id').execute()).toHaveLength(1);
  });

  it('/demo/login: CSP with script-src self and no inline script, frame-ancestors none, the CSRF token in a meta', async () => {
    const res = await app.inject('/demo/login');
    expect(res.statusCode).toBe(200);
    expectPageHeaders(res, true);
    expect(res.headers['content-security-policy']).toContain("connect-src 'self'");
    expect(res.body).toContain('<script src="/demo/assets/demo-login.js" defer></script>');
    expect(res.body).toContain('<link rel="stylesheet" href="/demo/assets/demo.css">');
    expect(meta(res.body, 'csrf-token').length).toBeGreaterThan(20);
    expect(res.body).toContain('data-state="loading"');
    expect(res.body).not.toContain(demo.apiKey);
  });

  it('serves its assets with their types; unknown names are 404', async () => {
    const js = await app.inject('/demo/assets/demo-login.js');
    expect(js.statusCode).toBe(200);
    expect(js.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(js.headers['x-content-type-options']).toBe('nosniff');
    expect(js.headers['cache-control']).toBe('public, max-age=300');
    // The script is the Login area's file, served as it is on disk.
    expect(js.body).toBe(readFileSync(new URL('../../../server/apis/login/assets/demo-login.js', import.meta.url), 'utf8'));
    expect(js.body).toContain("addEventListener('verified'");
    expect(js.body).toContain('new EventSource(');
    expect(js.body).not.toMatch(/innerHTML|eval\(|https?:\/\/(?!www\.w3\.org\/2000\/svg')/);
    expect((await app.inject('/demo/assets/demo.css')).headers['content-type']).toBe('text/css; charset=utf-8');
    expect((await app.inject('/demo/assets/favicon.svg')).headers['content-type']).toBe('image/svg+xml');
    for (const name of ['nope.js', 'toString', '__proto__', '..%2Fdemo.ts']) expect((await app.inject(`/demo/assets/${name}`)).statusCode).toBe(404);
  });

  it('the backend routes refuse requests without the CSRF token or from another site', async () => {
    const jar = new Jar();
    const page = jar.take(await app.inject('/demo/login'));
    const token = meta(page.body, 'csrf-token');
    const noToken = await app.inject({ method: 'POST', url: '/demo/login/api/start', headers: { ...JSON_POST, cookie: jar.header }, payload: '{}' });
    expect(noToken.statusCode).toBe(403);
    expect(noToken.json()).toEqual({ error: expect.any(String) });
    const crossSite = await app.inject({
      method: 'POST',
      url: '/demo/login/api/start',
      headers: { ...JSON_POST, cookie: jar.header, 'x-csrf-token': token, 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' },
      payload: '{}',
    });
    expect(crossSite.statusCode).toBe(403);
    const noCookie = await app.inject({ method: 'POST', url: '/demo/login/api/complete', headers: { ...JSON_POST, 'x-csrf-token': token }, payload: '{}' });
    expect(noCookie.statusCode).toBe(403);
    const sameSite = await app.inject({
      method: 'POST',
      url: '/demo/login/api/start',
      headers: { ...JSON_POST, cookie: jar.header, 'x-csrf-token': token, 'sec-fetch-site': 'same-site' },
      payload: '{}',
    });
    expect(sameSite.statusCode).toBe(403);
    const otherOrigin = await app.inject({
      method: 'POST',
      url: '/demo/login/api/start',
      headers: { ...JSON_POST, cookie: jar.header, 'x-csrf-token': token, origin: 'https://evil.example' },
      payload: '{}',
    });
    expect(otherOrigin.statusCode).toBe(403);
  });

  it('accepts what Chromium sends from a no-referrer page: Sec-Fetch-Site same-origin with Origin null', async () => {
    const jar = new Jar();
    const page = jar.take(await app.inject('/demo/login'));
    const res = await app.inject({
      method: 'POST',
      url: '/demo/login/api/complete',
      headers: { ...JSON_POST, cookie: jar.header, 'x-csrf-token': meta(page.body, 'csrf-token'), 'sec-fetch-site': 'same-origin', origin: 'null' },
      payload: '{}',
    });
    expect(res.statusCode).toBe(409); // past the checks: no sign-in in progress in this browser
    expect(res.json().error).toContain('No sign-in is in progress');
  });

  it('start → LOGIN from the sandbox phone → complete signs in; the API key never reaches the browser', async () => {
    const seen: string[] = [];
    const jar = new Jar();
    const call = async (options: InjectOptions) => {
      const res = jar.take(await app.inject(options));
      seen.push(JSON.stringify(res.headers), res.body);
      return res;
    };
    const page = await call({ url: '/demo/login' });
    const token = meta(page.body, 'csrf-token');
    const api = (path: string) =>
      call({ method: 'POST', url: `/demo/login/api/${path}`, headers: { ...JSON_POST, cookie: jar.header, 'x-csrf-token': token }, payload: '{}' });

    const start = await api('start');
    expect(start.statusCode).toBe(200);
    expect(start.headers['cache-control']).toBe('no-store');
    const s = start.json();
    expect(Object.keys(s).sort()).toEqual(
      [
        'authAppName',
        'displayPhoneNumber',
        'expiresAt',
        'loginCode',
        'messageText',
        'qrCodeSvg',
        'sandboxPhoneUrl',
        'sessionId',
        'subscribeToken',
        'waLink',
      ].sort(),
    );
    expect(s.qrCodeSvg).toMatch(/^<svg[\s>]/);
    expect(s.messageText).toContain(s.loginCode);
    // The service number is a sandbox number here: the page links to the simulated phone.
    expect(s.sandboxPhoneUrl).toBe(`/sandbox/phone?${new URLSearchParams({ to: s.displayPhoneNumber, text: s.messageText })}`);

    expect((await api('complete')).json()).toEqual({ status: 'pending' });

    // The user sends the message from the sandbox phone page.
    const phone = await call({ url: s.sandboxPhoneUrl, headers: { cookie: jar.header } });
    expect(phone.statusCode).toBe(200);
    expect(phone.body).toContain(`>${s.messageText}</textarea>`);
    const to = /<option value="([^"]+)" selected>([^<]+)</.exec(phone.body)!;
    expect(to[2]).toContain(s.displayPhoneNumber); // the number is chosen for the user
    const sent = await call({
      method: 'POST',
      url: '/sandbox/phone/send',
      headers: { ...FORM, cookie: jar.header },
      payload: new URLSearchParams({ _csrf: hidden(phone.body, '_csrf'), to: to[1]!, from: '+15550109876', name: 'Ana Souza', text: s.messageText }).toString(),
    });
    expect(sent.statusCode).toBe(303);

    // The stream says `verified`; the page asks its backend to complete.
    const done = await eventually(
      async () => {
        const answer = (await api('complete')).json();
        return answer.status !== 'pending' && answer;
      },
      { within: 5_000, what: 'the sign-in to complete', app, every: 100 },
    );
    expect(done).toEqual({ status: 'success', phone: '+15550109876', name: 'Ana Souza' });
    expect(jar.has('demo_user')).toBe(true);
    expect(jar.has('demo_login')).toBe(false);
    // The token was redeemed: nothing more to complete, and a reload shows who signed in.
    expect((await api('complete')).statusCode).toBe(409);
    const again = await call({ url: '/demo/login', headers: { cookie: jar.header } });
    expect(again.body).toContain('data-state="signed-in"');
    expect(again.body).toContain('Signed in as <span id="user-phone">+15550109876</span><span id="user-name"> (Ana Souza)</span>');

    for (const text of seen) {
      expect(text).not.toContain(demo.apiKey);
      expect(text).not.toContain(demo.apiKey.slice(8)); // not even its random part
    }
  });

  it('escapes what the signed-in cookie and the sandbox phone echo', async () => {
    const user = app.signCookie(JSON.stringify({ phone: '+15550100001', name: '<img src=x onerror=alert(1)>"' }));
    const page = await app.inject({ url: '/demo/login', headers: { cookie: `demo_user=${encodeURIComponent(user)}` } });
    expect(page.body).toContain('(&lt;img src=x onerror=alert(1)&gt;&quot;)');
    expect(page.body).not.toContain('<img src=x');
    // A forged (unsigned) cookie is nobody.
    const forged = await app.inject({ url: '/demo/login', headers: { cookie: `demo_user=${encodeURIComponent(JSON.stringify({ phone: '+1', name: 'x' }))}` } });
    expect(forged.body).toContain('data-state="loading"');

    const phone = await app.inject({
      url: `/sandbox/phone?${new URLSearchParams({ text: '</textarea><script>alert(1)</script>', to: '"><svg onload=alert(1)>' })}`,
    });
    expect(phone.statusCode).toBe(200);
    expectPageHeaders(phone, false);
    expect(phone.body).toContain('&lt;/textarea&gt;&lt;script&gt;alert(1)&lt;/script&gt;</textarea>');
    expect(phone.body).not.toContain('<svg onload');
  });

  it('/sandbox/phone lists the service number and refuses bad input, CSRF-less and cross-site posts', async () => {
    const jar = new Jar();
    const page = jar.take(await app.inject('/sandbox/phone'));
    expect(page.body).toContain('shared service number (Login)');
    expect(page.body).toContain('Demo sandbox');
    const csrf = hidden(page.body, '_csrf');
    const to = /<option value="([^"]+)"/.exec(page.body)![1]!;
    const post = (form: Record<string, string>, headers: Record<string, string> = {}) =>
      app.inject({
        method: 'POST',
        url: '/sandbox/phone/send',
        headers: { ...FORM, cookie: jar.header, ...headers },
        payload: new URLSearchParams(form).toString(),
      });
    const bad = await post({ _csrf: csrf, to, from: 'not a number', text: 'hi' });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain('international format');
    // Without +, a national number of the business's country (the demo's +1 555 numbers: US), only when valid.
    expect((await post({ _csrf: csrf, to, from: '030 1234567', text: 'hi' })).statusCode).toBe(400);
    expect((await post({ _csrf: csrf, to, from: '(617) 555-9018', text: 'hi' })).statusCode).toBe(303);
    const sender = await app.platform.store.db.selectFrom('contacts').select('phone').where('phone', 'in', ['+16175559018', '+6175559018']).execute();
    expect(sender).toEqual([{ phone: '+16175559018' }]);
    expect((await post({ _csrf: csrf, to: 'pn_doesnotexist000000', from: '+15550100002', text: 'hi' })).statusCode).toBe(400);
    expect((await post({ to, from: '+15550100002', text: 'hi' })).statusCode).toBe(403);
    expect((await post({ _csrf: csrf, to, from: '+15550100002', text: 'hi' }, { 'sec-fetch-site': 'cross-site' })).statusCode).toBe(403);
  });

  it('shows a conversation only to the browser that wrote in it', async () => {
    const jar = new Jar();
    const page = jar.take(await app.inject('/sandbox/phone'));
    const to = /<option value="([^"]+)"/.exec(page.body)![1]!;
    const sent = jar.take(
      await app.inject({
        method: 'POST',
        url: '/sandbox/phone/send',
        headers: { ...FORM, cookie: jar.header },
        payload: new URLSearchParams({ _csrf: hidden(page.body, '_csrf'), to, from: '+1 555 010 0003', name: 'Bo', text: 'hello <b>there</b>' }).toString(),
      }),
    );
    expect(sent.statusCode).toBe(303);
    expect(sent.headers.location).toBe(`/sandbox/phone?to=${to}&sent=1`);
    const mine = await app.inject({ url: sent.headers.location as string, headers: { cookie: jar.header } });
    expect(mine.body).toContain('Sent.');
    expect(mine.body).toContain('value="+15550100003"');
    expect(mine.body).toContain('<li class="in">hello &lt;b&gt;there&lt;/b&gt;<small>you');
    // Another browser typing the same sender number sees no history, not even after writing
    // from it: only its own messages on.
    const other = new Jar();
    const theirs = other.take(await app.inject(`/sandbox/phone?to=${to}`));
    expect(theirs.body).not.toContain('hello &lt;b&gt;there');
    const spoofed = other.take(
      await app.inject({
        method: 'POST',
        url: '/sandbox/phone/send',
        headers: { ...FORM, cookie: other.header },
        payload: new URLSearchParams({ _csrf: hidden(theirs.body, '_csrf'), to, from: '+15550100003', text: 'me too' }).toString(),
      }),
    );
    expect(spoofed.statusCode).toBe(303);
    const after = await app.inject({ url: spoofed.headers.location as string, headers: { cookie: other.header } });
    expect(after.body).toContain('<li class="in">me too<small>');
    expect(after.body).not.toContain('hello &lt;b&gt;there');
    // The first browser still sees its own message. (Later ones from others in the same
    // conversation too, once their stored second is after its first message's.)
    const first = await app.inject({ url: `/sandbox/phone?to=${to}`, headers: { cookie: jar.header } });
    expect(first.body).toContain('<li class="in">hello &lt;b&gt;there&lt;/b&gt;<small>you');
  });
});

describe('demo pages switched off', () => {
  it('production without DEMO: /sandbox/phone, /demo/login and the assets answer 404', async () => {
    const app = await build({ env: { NODE_ENV: 'production', DEMO: 'false', SECRET_KEY: 'k'.repeat(40), ALLOW_PRIVATE_URLS: 'false' } });
    for (const url of ['/sandbox/phone', '/demo/login', '/demo/assets/demo-login.js', '/demo/assets/demo.css']) {
      const res = await app.inject(url);
      expect(res.statusCode).toBe(404);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    }
    expect((await app.inject({ method: 'POST', url: '/sandbox/phone/send', headers: FORM, payload: 'to=x' })).statusCode).toBe(404);
  });

  it("production with DEMO on: the phone lists the service and demo numbers, not other workspaces' sandboxes", async () => {
    const app = await build({ env: { NODE_ENV: 'production', DEMO: 'true', SECRET_KEY: 'k'.repeat(40), ALLOW_PRIVATE_URLS: 'false' } });
    await seedDemoWorkspace(app.platform, app);
    const other = await signUp(app, 'elsewhere');
    const { numbers } = await createSandboxAccount(app.platform.store.db, other.workspace.id, { name: 'Private sandbox' });
    const page = await app.inject('/sandbox/phone');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('shared service number (Login)');
    expect(page.body).toContain('Demo sandbox');
    expect(page.body).not.toContain(numbers[0]!.display_phone_number);
    expect(page.body).not.toContain('Private sandbox');
    // Nor can a post name it.
    const csrf = hidden(page.body, '_csrf');
    const cookie = (page.cookies as { name: string; value: string }[]).map((c) => `${c.name}=${c.value}`).join('; ');
    const res = await app.inject({
      method: 'POST',
      url: '/sandbox/phone/send',
      headers: { ...FORM, cookie },
      payload: new URLSearchParams({ _csrf: csrf, to: numbers[0]!.id, from: '+15550100004', text: 'hi' }).toString(),
    });
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain('Choose one of the sandbox numbers.');
  });

  it('DEMO off outside production: the sandbox phone stays, the Login demo is gone', async () => {
    const app = await build({ env: { DEMO: 'false' } });
    expect((await app.inject('/sandbox/phone')).statusCode).toBe(200);
    expect((await app.inject('/demo/assets/demo.css')).statusCode).toBe(200);
    expect((await app.inject('/demo/login')).statusCode).toBe(404);
    expect((await app.inject('/demo/assets/demo-login.js')).statusCode).toBe(404);
  });

  it('DEMO on without a demo workspace: the page says so instead of failing', async () => {
    const app = await build({ env: { DEMO: 'true' } });
    const res = await app.inject('/demo/login');
    expect(res.statusCode).toBe(503);
    expect(res.body).toContain('There is no demo workspace');
    expect(res.body).toContain('data-state="error"');
  });
});
