// Connecting Google: the authorization URL parsed parameter by parameter (client, redirect,
// code flow, scopes, offline access, state, PKCE S256 checked against the stored verifier),
// the state stored only as a digest, and the declared 422 when no client is configured.
import { createHash } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { tenant, type Tenant } from '../inbox/support.js';
import { PROBLEMS } from './support.js';

const CLIENT_ID = '401234567890-abc.apps.googleusercontent.com';
const REDIRECT = 'https://api.chatapp.example/api/google/callback';
let app: FastifyInstance;
let bare: FastifyInstance;
let t: Tenant;

beforeAll(async () => {
  app = await buildShared({ env: { GOOGLE_CLIENT_ID: CLIENT_ID, GOOGLE_REDIRECT_URI: REDIRECT } });
  bare = await buildShared();
  t = await tenant(app);
}, 240_000);

const connect = (on: FastifyInstance, who: Tenant | null) => on.inject({ method: 'GET', url: '/api/google/connect', headers: who ? who.headers : {} });
const states = (on: FastifyInstance, workspaceId: string) =>
  on.platform.store.db.selectFrom('google_connect_states').selectAll().where('workspace_id', '=', workspaceId).execute();

describe('getGoogleConnectUrl', () => {
  it('a Google authorization-code URL for the configured client, with offline access, a fresh state and PKCE S256', async () => {
    const res = await connect(app, t);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    const url = new URL(body.authorization_url);
    expect(`${url.origin}${url.pathname}`).toBe('https://accounts.google.com/o/oauth2/v2/auth');
    const q = url.searchParams;
    expect(q.get('client_id')).toBe(CLIENT_ID);
    expect(q.get('redirect_uri')).toBe(REDIRECT);
    expect(q.get('response_type')).toBe('code');
    expect(q.get('scope')!.split(' ')).toEqual(body.scopes);
    expect(body.scopes).toEqual(expect.arrayContaining(['openid', 'email', 'https://www.googleapis.com/auth/spreadsheets']));
    expect(q.get('access_type')).toBe('offline');
    expect(q.get('prompt')).toBe('consent');
    expect(q.get('state')).toBe(body.state);
    expect(body.state).toMatch(/^gst_[0-9A-Za-z]{20,}$/);
    expect(q.get('code_challenge_method')).toBe('S256');
    const challenge = q.get('code_challenge')!;
    expect(challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const expires = Date.parse(body.expires_at);
    expect(expires - Date.now()).toBeGreaterThan(9 * 60_000);
    expect(expires - Date.now()).toBeLessThanOrEqual(10 * 60_000);

    // Stored for the callback: the state as a digest only, the verifier sealed and matching the challenge.
    const rows = await states(app, t.workspaceId);
    const row = rows.find((r) => r.state_digest === app.platform.secrets.digest(body.state));
    expect(row).toBeDefined();
    expect(JSON.stringify(rows)).not.toContain(body.state);
    const verifier = app.platform.secrets.decrypt(row!.code_verifier_enc);
    expect(verifier).toMatch(/^[A-Za-z0-9_-]{43,128}$/);
    expect(createHash('sha256').update(verifier).digest('base64url')).toBe(challenge);
    expect(row).toMatchObject({ redirect_uri: REDIRECT, scopes: body.scopes.join(' ') });
    expect(new Date(row!.expires_at).toISOString()).toBe(body.expires_at);
  });

  it('each call has its own state and challenge', async () => {
    const one = (await connect(app, t)).json();
    const two = (await connect(app, t)).json();
    expect(one.state).not.toBe(two.state);
    expect(new URL(one.authorization_url).searchParams.get('code_challenge')).not.toBe(new URL(two.authorization_url).searchParams.get('code_challenge'));
  });

  it("expired states of the workspace are removed as new ones are made; other workspaces' are not touched", async () => {
    const mine = await tenant(app);
    const other = await tenant(app);
    await connect(app, mine);
    await connect(app, other);
    const db = app.platform.store.db;
    const past = new Date(Date.now() - 60_000);
    await db.updateTable('google_connect_states').set({ expires_at: past }).where('workspace_id', 'in', [mine.workspaceId, other.workspaceId]).execute();
    const fresh = (await connect(app, mine)).json();
    const rows = await states(app, mine.workspaceId);
    expect(rows.map((r) => r.state_digest)).toEqual([app.platform.secrets.digest(fresh.state)]);
    expect(await states(app, other.workspaceId)).toHaveLength(1);
  });

  it('no Google client configured: 422 unprocessable (declared), naming the settings; nothing stored', async () => {
    const u = await tenant(bare);
    const res = await connect(bare, u);
    expect(res.statusCode).toBe(422);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.json()).toMatchObject({ type: `${PROBLEMS}unprocessable`, status: 422 });
    expect(res.json().detail).toContain('GOOGLE_CLIENT_ID');
    expect(await states(bare, u.workspaceId)).toEqual([]);
  });

  it('a client id without its redirect URI is not configured either: 422', async () => {
    const half = await buildShared({ env: { GOOGLE_CLIENT_ID: CLIENT_ID } });
    const u = await tenant(half);
    const res = await connect(half, u);
    expect(res.statusCode).toBe(422);
    expect(res.json().detail).toContain('GOOGLE_REDIRECT_URI');
  });

  it('A1 no credential: 401, nothing stored', async () => {
    const before = await app.platform.store.db
      .selectFrom('google_connect_states')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    const res = await connect(app, null);
    expect(res.statusCode).toBe(401);
    const after = await app.platform.store.db
      .selectFrom('google_connect_states')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(after.n)).toBe(Number(before.n));
  });
});
