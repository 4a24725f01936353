// The typed clients against a listening server: one typed call per API, the auth middleware
// (API key, bearer, token provider), credentials kept to baseUrl's origin, problems as
// ProblemError, unwrap and isProblem.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  createAccountClient,
  createConnectClient,
  createLoginClient,
  createMessagingClient,
  DEFAULT_USER_AGENT,
  isProblem,
  ProblemError,
  unwrap,
} from '../../../clients/index.js';
import { insertLoginApp } from '#test/support/login-app.js';
import { startReceiver } from '#test/support/receiver.js';
import { createKey, signUp, type SignedUp } from '../account/support.js';
import { serve, type Served } from './support.js';

let s: Served;
let owner: SignedUp;
let apiKey: string;

beforeAll(async () => {
  s = await serve();
  owner = await signUp(s.app);
  apiKey = (await createKey(s.app, owner.token)).secret;
});

describe('typed calls', () => {
  it('Account: getAccount with the owner bearer', async () => {
    const account = createAccountClient({ baseUrl: s.baseUrl, auth: { bearer: owner.token } });
    const me = unwrap(await account.GET('/api/account/me'));
    expect(me.owner.email).toBe(owner.email);
    expect(me.workspace.id).toBe(owner.workspace.id);
  });

  it('Connect: create and list clients with the owner bearer', async () => {
    const connect = createConnectClient({ baseUrl: s.baseUrl, auth: { bearer: owner.token } });
    const created = unwrap(
      await connect.POST('/api/connect/clients', { body: { name: 'Typed CRM', client_type: 'confidential', redirect_uris: ['https://crm.test/cb'] } }),
    );
    expect(created.client_id).toMatch(/^cli_/);
    const page = unwrap(await connect.GET('/api/connect/clients'));
    expect(page.data.map((c) => c.client_id)).toContain(created.client_id);
  });

  it('Login: start a session with the Login app API key', async () => {
    const { apiKey: loginKey } = await insertLoginApp(s.app);
    const login = createLoginClient({ baseUrl: s.baseUrl, auth: { apiKey: loginKey } });
    const started = unwrap(await login.POST('/v1/auth/chatapp/start', { body: {} }));
    expect(started.sessionId).toMatch(/^ls_/);
    const status = unwrap(await login.GET('/v1/auth/chatapp/status/{sessionId}', { params: { path: { sessionId: started.sessionId } } }));
    expect(status.status).toBe('pending');
  });

  it('Messaging: create then list contacts with a workspace API key (a token provider)', async () => {
    let asked = 0;
    const messaging = createMessagingClient({ baseUrl: s.baseUrl, auth: async () => (asked++, { apiKey }) });
    const contact = unwrap(await messaging.POST('/api/contacts', { body: { contact_no: '+1 555 010 0303', name: 'Ana' } }));
    const list = unwrap(await messaging.GET('/api/contacts', { params: { query: { q: 'Ana' } } }));
    expect(list.data.map((c) => c.id)).toContain(contact.id);
    expect(asked).toBe(2); // asked before every request, so a refreshed credential is used at once
  });
});

describe('auth middleware', () => {
  it('no credential: 401 unauthorized as ProblemError with the challenge', async () => {
    const account = createAccountClient({ baseUrl: s.baseUrl });
    const result = await account.GET('/api/account/me');
    expect(result.response.status).toBe(401);
    expect(result.response.headers.get('www-authenticate')).toMatch(/Bearer/);
    expect(() => unwrap(result)).toThrow(ProblemError);
  });

  it('a provider returning a string sends it as a bearer token', async () => {
    const account = createAccountClient({ baseUrl: s.baseUrl, auth: async () => owner.token });
    expect(unwrap(await account.GET('/api/account/me')).owner.email).toBe(owner.email);
  });

  it('sends User-Agent (default and custom), X-API-Key only, never both schemes', async () => {
    const seen: Request[] = [];
    const spy = (request: Request) => (seen.push(request.clone()), fetch(request));
    await createMessagingClient({ baseUrl: s.baseUrl, auth: { apiKey }, fetch: spy }).GET('/api/contacts');
    await createMessagingClient({ baseUrl: s.baseUrl, auth: { apiKey }, fetch: spy, userAgent: 'crm-sync/2.0' }).GET('/api/contacts');
    expect(seen.map((r) => r.headers.get('user-agent'))).toEqual([DEFAULT_USER_AGENT, 'crm-sync/2.0']);
    expect(seen.every((r) => r.headers.get('x-api-key') === apiKey && !r.headers.has('authorization'))).toBe(true);
  });

  it('a request to another origin (per-request baseUrl) carries no credential', async () => {
    const other = await startReceiver(() => 200);
    try {
      const messaging = createMessagingClient({ baseUrl: s.baseUrl, auth: { apiKey } });
      await messaging.GET('/api/contacts', { baseUrl: new URL(other.url).origin, parseAs: 'text' });
      expect(other.received).toHaveLength(1);
      expect(other.received[0]!.headers['x-api-key']).toBeUndefined();
      expect(other.received[0]!.headers.authorization).toBeUndefined();
    } finally {
      await other.close();
    }
  });

  it('a redirect is not followed (it would carry the key elsewhere): the 3xx comes back as is', async () => {
    const elsewhere = await startReceiver(() => 200);
    const redirecting = createServer((_req, res) => res.writeHead(307, { location: elsewhere.url }).end());
    await new Promise<void>((r) => redirecting.listen(0, '127.0.0.1', r));
    try {
      const baseUrl = `http://127.0.0.1:${(redirecting.address() as AddressInfo).port}`;
      const messaging = createMessagingClient({ baseUrl, auth: { apiKey } });
      const res = await messaging.GET('/api/contacts', { parseAs: 'text' });
      expect(res.response.status).toBe(307);
      expect(elsewhere.received).toHaveLength(0);
    } finally {
      await elsewhere.close();
      await new Promise((r) => redirecting.close(r));
    }
  });
});

describe('problems', () => {
  it('404 of an unknown id becomes ProblemError with the spec fields; isProblem by short name and URI', async () => {
    const messaging = createMessagingClient({ baseUrl: s.baseUrl, auth: { apiKey } });
    const error = await messaging
      .GET('/api/contacts/{id}', { params: { path: { id: 'ct_0000000000000000' } } })
      .then(unwrap)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProblemError);
    const p = error as ProblemError;
    expect(p).toMatchObject({ status: 404, type: 'https://chatapp.example/problems/not-found', title: 'Not found', problem: 'not-found' });
    expect(p.request_id).toBe(p.response!.headers.get('x-request-id'));
    expect(isProblem(p, 'not-found')).toBe(true);
    expect(isProblem(p, 'https://chatapp.example/problems/not-found')).toBe(true);
    expect(isProblem(p, 'conflict')).toBe(false);
    expect(isProblem(new Error('x'))).toBe(false);
  });

  it('400 validation carries errors[] with the invalid field', async () => {
    const messaging = createMessagingClient({ baseUrl: s.baseUrl, auth: { apiKey } });
    const error = await messaging
      .POST('/api/contacts', { body: { contact_no: 'not a phone' } })
      .then(unwrap)
      .then(
        () => undefined,
        (e: unknown) => e as ProblemError,
      );
    expect(isProblem(error, 'validation')).toBe(true);
    expect(error!.errors?.length).toBeGreaterThan(0);
  });
});
