// Shared steps of the Account tests: sign up a workspace, create keys, compare 401 bodies.
import type { FastifyInstance } from 'fastify';
import type { components } from '#generated/account/types.js';
import { base62 } from '#server/lib/ids.js';

type WorkspaceCreated = components['schemas']['WorkspaceCreated'];
type ApiKeyWithSecret = components['schemas']['ApiKeyWithSecret'];

export const PASSWORD = 'correct horse battery staple';

export interface SignedUp extends WorkspaceCreated {
  email: string;
  token: string;
}

export async function signUp(app: FastifyInstance, name = base62(8).toLowerCase()): Promise<SignedUp> {
  const email = `${name}@example.test`;
  const res = await app.inject({
    method: 'POST',
    url: '/api/account/workspaces',
    payload: { email, password: PASSWORD, name: `Owner ${name}`, workspace_name: `Workspace ${name}`, workspace_slug: `ws-${name}` },
  });
  if (res.statusCode !== 201) throw new Error(`sign-up failed: ${res.statusCode} ${res.body}`);
  const body = res.json() as WorkspaceCreated;
  return { ...body, email, token: body.session.access_token };
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

export async function createKey(app: FastifyInstance, token: string, body: Record<string, unknown> = { name: 'test key' }): Promise<ApiKeyWithSecret> {
  const res = await app.inject({ method: 'POST', url: '/api/account/api-keys', headers: bearer(token), payload: body });
  if (res.statusCode !== 201) throw new Error(`create key failed: ${res.statusCode} ${res.body}`);
  return res.json();
}

/** A problem body without the per-request fields, to compare answers for sameness. */
export function sameness(body: Record<string, unknown>): Record<string, unknown> {
  const { request_id: _id, instance: _instance, ...rest } = body;
  return rest;
}
