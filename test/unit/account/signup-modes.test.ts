// SIGNUP: `invite` takes a sign-up only with an unused, unexpired invite code from the operator
// (for the email it names, if any); `closed` takes none. Both answer declared 403 problems, and
// the Connect sign-up page follows the setting.
import { describe, expect, it } from 'vitest';
import { issueInvite } from '#server/apis/account/invites.js';
import { base62 } from '#server/lib/ids.js';
import { build, buildShared } from '#test/helper.js';
import { Browser, REDIRECT, authorizeUrl, createClient, hiddenInputs, pkce } from '#test/unit/connect/oauth/support.js';
import type { SignedUp } from './support.js';

const PROBLEM = 'https://chatapp.example/problems/';
const SECRET_KEY = 'signup-modes-secret-key-of-both-instances-0123';
const app = await buildShared({ env: { SIGNUP: 'invite', SECRET_KEY, RATE_LIMIT_IP_PER_MINUTE: '10000' } });

function signUp(email: string, inviteCode?: string) {
  const slug = `ws-${base62(8).toLowerCase()}`;
  return app.inject({
    method: 'POST',
    url: '/api/account/workspaces',
    payload: {
      email,
      password: 'correct horse battery staple',
      name: 'Ines',
      workspace_name: 'Invited',
      workspace_slug: slug,
      ...(inviteCode ? { invite_code: inviteCode } : {}),
    },
  });
}

const email = () => `${base62(8).toLowerCase()}@example.test`;

function expectProblem(res: { statusCode: number; headers: Record<string, unknown>; json(): { type: string; status: number } }, name: string) {
  expect(res.statusCode).toBe(403);
  expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
  expect(res.json()).toMatchObject({ type: `${PROBLEM}${name}`, status: 403 });
}

describe('SIGNUP=invite', () => {
  it('without a code: 403 invite-required, and nothing is created', async () => {
    const before = await app.platform.store.db.selectFrom('workspaces').select('id').execute();
    expectProblem(await signUp(email()), 'invite-required');
    expect(await app.platform.store.db.selectFrom('workspaces').select('id').execute()).toHaveLength(before.length);
  });

  it('a valid code signs up once; used again, unknown or malformed it is refused', async () => {
    const invite = await issueInvite(app.platform);
    const res = await signUp(email(), invite.code);
    expect(res.statusCode, res.body).toBe(201);
    const row = await app.platform.store.db.selectFrom('signup_invites').selectAll().where('id', '=', invite.id).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ used_by_workspace_id: res.json().workspace.id });
    expect(row.code_digest).not.toContain(invite.code);
    expectProblem(await signUp(email(), invite.code), 'invite-required');
    expectProblem(await signUp(email(), `inv_${base62(24)}`), 'invite-required');
    expect((await signUp(email(), 'not-an-invite')).statusCode).toBe(400);
  });

  it('an expired code, or one for another email, is refused; for its own email it works', async () => {
    expectProblem(await signUp(email(), (await issueInvite(app.platform, { days: -1 })).code), 'invite-required');
    const named = await issueInvite(app.platform, { email: 'Named@Example.test' });
    expectProblem(await signUp(email(), named.code), 'invite-required');
    expect((await signUp('named@example.test', named.code)).statusCode).toBe(201);
  });

  it('a sign-up that fails after the check (a taken email) leaves the code unused', async () => {
    const taken = email();
    expect((await signUp(taken, (await issueInvite(app.platform)).code)).statusCode).toBe(201);
    const invite = await issueInvite(app.platform);
    expect((await signUp(taken, invite.code)).statusCode).toBe(409);
    expect((await signUp(email(), invite.code)).statusCode).toBe(201);
  });
});

async function invitedOwner(): Promise<SignedUp> {
  const address = email();
  const res = await signUp(address, (await issueInvite(app.platform)).code);
  const body = res.json();
  return { ...body, email: address, token: body.session.access_token };
}

const signUpParams = (clientId: string) => ({
  client_id: clientId,
  redirect_uri: REDIRECT,
  response_type: 'code',
  scope: 'documents:write',
  code_challenge: pkce().challenge,
  code_challenge_method: 'S256',
  org_name: 'New Travel',
  slug: `ws-${base62(8).toLowerCase()}`,
});

describe('the Connect sign-up page', () => {
  it('SIGNUP=invite: asks for the invite code, and says why a bad one is refused', async () => {
    const client = await createClient(app, await invitedOwner());
    const browser = new Browser(app);
    const page = await browser.get(authorizeUrl(signUpParams(client.client_id)));
    expect(page.statusCode).toBe(200);
    expect(page.body).toMatch(/<input name="invite_code"[^>]*required>/);
    const res = await browser.postForm('/connect/authorize/decision', {
      ...hiddenInputs(page.body),
      org_name: 'New Travel',
      slug: `ws-${base62(8).toLowerCase()}`,
      email: email(),
      name: 'Nia',
      password: 'correct horse battery staple',
      invite_code: `inv_${base62(24)}`,
    });
    expect(res.statusCode).toBe(403);
    expect(res.body).toContain('This invite code is not valid');
    expect(res.body).toMatch(/<input name="invite_code" value="inv_/);
  });

  it('SIGNUP=closed: the API answers 403 signup-closed and the page says sign-up is closed, with no form', async () => {
    const client = await createClient(app, await invitedOwner());
    const closed = await build({ env: { SIGNUP: 'closed', SECRET_KEY }, overrides: { store: app.platform.store } });
    const res = await closed.inject({
      method: 'POST',
      url: '/api/account/workspaces',
      payload: { email: email(), password: 'correct horse battery staple', name: 'C', workspace_name: 'C', workspace_slug: 'closed-ws' },
    });
    expectProblem(res, 'signup-closed');
    const page = await new Browser(closed).get(authorizeUrl(signUpParams(client.client_id)));
    expect(page.statusCode).toBe(403);
    expect(page.body).toContain('Sign-up is closed');
    expect(page.body).not.toContain('name="password"');
    expect(page.body).toContain('Sign in</a>');
  });
});
