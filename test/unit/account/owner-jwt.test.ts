// bad-inputs A9: owner JWTs with alg none, expired, signed by another key, or meant for another use are 401.
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { SignJWT, UnsecuredJWT, decodeJwt } from 'jose';
import { issueOwnerToken, verifyOwnerToken } from '#server/auth/owner-jwt.js';
import { buildShared } from '#test/helper.js';
import { bearer, signUp, type SignedUp } from './support.js';

describe('owner session JWTs', () => {
  let app: FastifyInstance;
  let a: SignedUp;
  let clock = Date.now();
  beforeAll(async () => {
    app = await buildShared({ overrides: { now: () => new Date(clock) } });
    a = await signUp(app, 'jwt-owner');
  });

  const me = (token: string) => app.inject({ url: '/api/account/me', headers: bearer(token) });

  it('carries iss, sub, ws, iat, exp and jti, and opens owner operations', async () => {
    const claims = decodeJwt(a.token);
    expect(claims).toMatchObject({ iss: app.config.publicUrl, sub: a.owner.id, ws: a.workspace.id, aud: 'owner-api' });
    expect(claims.exp! - claims.iat!).toBe(app.config.ownerSessionSeconds);
    expect(claims.jti).toEqual(expect.any(String));
    expect((await me(a.token)).statusCode).toBe(200);
  });

  it('A9 alg none is 401', async () => {
    const claims = decodeJwt(a.token);
    const unsigned = new UnsecuredJWT({ ...claims }).encode();
    const res = await me(unsigned);
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer realm="account"');
  });

  it('A9 signed by another key is 401', async () => {
    const claims = decodeJwt(a.token);
    const forged = await new SignJWT({ ...claims }).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(new TextEncoder().encode('x'.repeat(64)));
    expect((await me(forged)).statusCode).toBe(401);
  });

  it('A9 a payload changed under the original signature is 401', async () => {
    const [header, , signature] = a.token.split('.');
    const payload = Buffer.from(JSON.stringify({ ...decodeJwt(a.token), ws: 'ws_someoneElse00000' })).toString('base64url');
    expect((await me(`${header}.${payload}.${signature}`)).statusCode).toBe(401);
  });

  it('A9 expired is 401', async () => {
    const issued = await issueOwnerToken(app.platform, { ownerId: a.owner.id, workspaceId: a.workspace.id });
    expect((await me(issued.token)).statusCode).toBe(200);
    clock += (app.config.ownerSessionSeconds + 1) * 1000;
    try {
      expect((await me(issued.token)).statusCode).toBe(401);
    } finally {
      clock -= (app.config.ownerSessionSeconds + 1) * 1000;
    }
  });

  it('a browser session token is not a bearer token, nor the other way round', async () => {
    const browser = await issueOwnerToken(app.platform, { ownerId: a.owner.id, workspaceId: a.workspace.id }, 'owner-browser');
    expect((await me(browser.token)).statusCode).toBe(401);
    expect(await verifyOwnerToken(app.platform, a.token, 'owner-browser')).toBeNull();
  });

  it('a verified token is remembered for its audience only, and not past its exp', async () => {
    const browser = await issueOwnerToken(app.platform, { ownerId: a.owner.id, workspaceId: a.workspace.id }, 'owner-browser');
    const claims = { ownerId: a.owner.id, workspaceId: a.workspace.id };
    expect(await verifyOwnerToken(app.platform, browser.token, 'owner-browser')).toEqual(claims);
    expect(await verifyOwnerToken(app.platform, browser.token, 'owner-browser')).toEqual(claims);
    expect(await verifyOwnerToken(app.platform, browser.token, 'owner-api')).toBeNull();
    const lifetime = app.config.ownerSessionSeconds * 1000;
    clock += lifetime;
    try {
      expect(await verifyOwnerToken(app.platform, browser.token, 'owner-browser')).toBeNull();
    } finally {
      clock -= lifetime;
    }
  });

  it('a token for an owner who no longer exists is 401; garbage never 500', async () => {
    const ghost = await issueOwnerToken(app.platform, { ownerId: 'usr_gone0000000000000', workspaceId: a.workspace.id });
    expect((await me(ghost.token)).statusCode).toBe(401);
    for (const token of ['x', 'a.b.c', '.....', 'é'.repeat(30), 'e'.repeat(5000)]) expect((await me(token)).statusCode).toBe(401);
  });
});
