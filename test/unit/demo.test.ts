// The demo workspace is created once, on an empty store, and its printed credentials work.
import { describe, expect, it } from 'vitest';
import { describeDemo, describeExistingDemo, reissueDemoCredentials, seedDemoWorkspace } from '#server/demo.js';
import { build } from '../helper.js';

describe('demo workspace', () => {
  it('is created on an empty store with working credentials, and only once', async () => {
    const app = await build();
    const demo = await seedDemoWorkspace(app.platform);
    expect(demo).not.toBeNull();
    const session = await app.inject({ method: 'POST', url: '/api/account/sessions', payload: { email: demo!.email, password: demo!.password } });
    expect(session.statusCode).toBe(201);
    const me = await app.inject({ url: '/api/account/me', headers: { authorization: `Bearer ${session.json().access_token}` } });
    expect(me.json().workspace.id).toBe(demo!.workspaceId);
    const keys = await app.platform.store.db.selectFrom('api_keys').select(['digest', 'prefix']).execute();
    expect(keys).toHaveLength(1);
    expect(keys[0].digest).not.toContain(demo!.apiKey);
    expect(demo!.apiKey.startsWith(keys[0].prefix)).toBe(true);
    const numbers = await app.platform.store.db.selectFrom('phone_numbers').select('workspace_id').execute();
    expect(numbers).toEqual([{ workspace_id: demo!.workspaceId }]);
    expect(await seedDemoWorkspace(app.platform)).toBeNull();
  });
});

describe('demo credentials', () => {
  const start = (app: Awaited<ReturnType<typeof build>>, key: string) =>
    app.inject({ method: 'POST', url: '/v1/auth/chatapp/start', headers: { 'x-api-key': key }, payload: {} });
  const signIn = (app: Awaited<ReturnType<typeof build>>, email: string, password: string) =>
    app.inject({ method: 'POST', url: '/api/account/sessions', payload: { email, password } });

  it('the first banner prints the Login key; re-issuing replaces the password and both keys', async () => {
    const app = await build({ env: { DEMO: 'true' } });
    const first = (await seedDemoWorkspace(app.platform, app))!;
    expect(first.loginApiKey).toMatch(/^lk_/);
    const banner = describeDemo(first, 'http://127.0.0.1:3000');
    expect(banner).toContain(`Login key    ${first.loginApiKey}`);
    expect(banner).toContain('http://127.0.0.1:3000/docs');
    expect(banner).toContain('npm run demo:credentials');
    expect((await start(app, first.loginApiKey!)).statusCode).toBe(201);

    const again = (await reissueDemoCredentials(app))!;
    expect(again).toMatchObject({ workspaceId: first.workspaceId, email: first.email, loginAppId: first.loginAppId, sandboxNumber: first.sandboxNumber });
    expect(again.password).not.toBe(first.password);
    expect((await signIn(app, first.email, first.password)).statusCode).toBe(401);
    expect((await signIn(app, again.email, again.password)).statusCode).toBe(201);
    const contacts = (key: string) => app.inject({ url: '/api/contacts', headers: { 'x-api-key': key } });
    expect((await contacts(first.apiKey)).statusCode).toBe(401);
    expect((await contacts(again.apiKey)).statusCode).toBe(200);
    expect((await start(app, first.loginApiKey!)).statusCode).toBe(401);
    expect((await start(app, again.loginApiKey!)).statusCode).toBe(201);
    // The demo page keeps working: it reads the new Login key from the store.
    expect((await app.demoLogin.get())?.apiKey).toBe(again.loginApiKey);
    expect(describeExistingDemo('http://127.0.0.1:3000')).toMatch(/owner@demo\.example[\s\S]*npm run demo:credentials/);
  });

  it('a store without a demo workspace has none to re-issue', async () => {
    const app = await build({ env: { DEMO: 'true' } });
    expect(await reissueDemoCredentials(app)).toBeNull();
  });
});
