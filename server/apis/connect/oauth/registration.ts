// Dynamic client registration (RFC 7591) and the client configuration endpoint (RFC 7592),
// and the owner's initial access tokens that open registration. Off by default: without an
// initial access token the workspace owner issued (and not revoked or expired), registration
// answers 401 (bad-inputs O9). A registered client belongs to that token's workspace, gets a registration
// access token (`rat_…`, stored as a keyed digest) for its configuration endpoint, and never
// skips the consent page. Metadata errors are RFC 7591 §3.2.2 JSON (`invalid_redirect_uri`,
// `invalid_client_metadata`), also when the contract's schema refuses the body.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { components, operations } from '#generated/connect/types.js';
import { authOf, authorizationCredential, registerScheme, type AuthContext } from '#server/auth/authenticate.js';
import type { Handler } from '#server/lib/handler-types.js';
import { base62, newId, RESOURCE_ID } from '#server/lib/ids.js';
import { HttpProblem, sendProblem } from '#server/lib/problems.js';
import type { Platform } from '#server/platform.js';
import { toProblem } from '#server/plugins/problems.js';
import { checkRedirectUris, type ClientRow } from './clients.js';
import { SCOPES } from './tokens.js';

type S = components['schemas'];

declare module '../../../auth/authenticate.js' {
  interface AuthKinds {
    registration_initial: true;
    registration_client: true;
  }
  interface AuthContext {
    /** The initial access token's row id (kind `registration_initial`). */
    registrationTokenId?: string;
  }
}

const INITIAL_TOKEN = /^rit_[0-9A-Za-z]{40}$/;
const REGISTRATION_TOKEN = /^rat_[0-9A-Za-z]{40}$/;
const PREFIX_LENGTH = 12;
const AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'none'];
const GRANT_TYPES = ['authorization_code', 'refresh_token'];
const NO_STORE = { 'cache-control': 'no-store' };

class RegistrationFailure extends Error {
  constructor(
    readonly error: 'invalid_redirect_uri' | 'invalid_client_metadata',
    readonly description: string,
  ) {
    super(description);
  }
}

function sendFailure(reply: FastifyReply, failure: RegistrationFailure): FastifyReply {
  return reply.code(400).headers(NO_STORE).type('application/json').send({ error: failure.error, error_description: failure.description });
}

interface Registered {
  client_name: string;
  token_endpoint_auth_method: string;
  grant_types: string[];
  response_types: string[];
  scope?: string;
  client_uri?: string;
}

/** The metadata as it will be kept, or a RegistrationFailure naming the first problem. */
function checkMetadata(body: S['ClientMetadata']): { redirectUris: string[]; registered: Registered } {
  try {
    checkRedirectUris(body.redirect_uris);
  } catch (error) {
    const first = error instanceof HttpProblem ? error.problem.errors?.[0] : undefined;
    throw new RegistrationFailure('invalid_redirect_uri', first ? `${first.pointer.replace('/body/', '')} ${first.detail}.` : 'redirect_uris are invalid.');
  }
  const invalid = (description: string) => new RegistrationFailure('invalid_client_metadata', description);
  const method = body.token_endpoint_auth_method ?? 'client_secret_basic';
  if (!AUTH_METHODS.includes(method)) throw invalid('token_endpoint_auth_method must be client_secret_basic, client_secret_post or none.');
  const grants = body.grant_types ?? GRANT_TYPES;
  if (!grants.length || grants.some((g) => !GRANT_TYPES.includes(g))) throw invalid('grant_types may hold authorization_code and refresh_token only.');
  const responses = body.response_types ?? ['code'];
  if (responses.some((r) => r !== 'code')) throw invalid('response_types may hold code only.');
  if (body.scope !== undefined) {
    const unknown = body.scope
      .split(' ')
      .filter(Boolean)
      .find((s) => !(SCOPES as readonly string[]).includes(s));
    if (unknown !== undefined) throw invalid(`Unknown scope '${unknown.slice(0, 64)}'.`);
  }
  if (body.client_uri !== undefined && !/^https?:\/\/\S+$/.test(body.client_uri)) throw invalid('client_uri must be an http(s) URL.');
  const name = body.client_name?.trim() || 'Unnamed client';
  return {
    redirectUris: body.redirect_uris,
    registered: {
      client_name: name,
      token_endpoint_auth_method: method,
      grant_types: [...new Set(grants)],
      response_types: ['code'],
      ...(body.scope !== undefined ? { scope: body.scope } : {}),
      ...(body.client_uri !== undefined ? { client_uri: body.client_uri } : {}),
    },
  };
}

function information(platform: Platform, row: ClientRow): S['ClientInformation'] {
  const registered = (row.registration_metadata ?? {}) as Partial<Registered>;
  return {
    client_id: row.id,
    client_id_issued_at: Math.floor(row.created_at.getTime() / 1000),
    registration_client_uri: `${platform.config.publicUrl}/api/oauth/register/${row.id}`,
    redirect_uris: row.redirect_uris,
    client_name: row.name,
    token_endpoint_auth_method: registered.token_endpoint_auth_method ?? (row.client_type === 'public' ? 'none' : 'client_secret_basic'),
    grant_types: registered.grant_types ?? GRANT_TYPES,
    response_types: ['code'],
    ...(registered.scope !== undefined ? { scope: registered.scope } : {}),
    ...(registered.client_uri !== undefined ? { client_uri: registered.client_uri } : {}),
  };
}

async function answering<T>(reply: FastifyReply, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof RegistrationFailure) return sendFailure(reply, error) as never;
    throw error;
  }
}

export const registerClient: Handler<operations['registerClient']> = async (request, reply) =>
  answering(reply, async () => {
    const { platform } = request.server;
    const auth = authOf(request);
    const { redirectUris, registered } = checkMetadata(request.body);
    const secret = registered.token_endpoint_auth_method === 'none' ? null : `cs_${base62(32)}`;
    const registrationToken = `rat_${base62(40)}`;
    const now = platform.now();
    const row = await platform.store.db.transaction().execute(async (tx) => {
      await tx.updateTable('connect_registration_tokens').set({ last_used_at: now }).where('id', '=', auth.registrationTokenId!).execute();
      return tx
        .insertInto('connect_clients')
        .values({
          id: newId('cli'),
          workspace_id: auth.workspaceId,
          name: registered.client_name,
          client_type: secret ? 'confidential' : 'public',
          redirect_uris: redirectUris,
          secret_prefix: secret?.slice(0, 11) ?? null,
          secret_digest: secret ? platform.secrets.digest(secret) : null,
          registration_digest: platform.secrets.digest(registrationToken),
          registration_metadata: JSON.stringify(registered),
          created_at: now,
          updated_at: now,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
    });
    reply.code(201).headers(NO_STORE);
    return {
      ...information(platform, row),
      ...(secret ? { client_secret: secret, client_secret_expires_at: 0 } : {}),
      registration_access_token: registrationToken,
    };
  });

async function registeredClient(platform: Platform, auth: AuthContext): Promise<ClientRow> {
  return platform.store.db.selectFrom('connect_clients').selectAll().where('id', '=', auth.clientId!).executeTakeFirstOrThrow();
}

export const getRegisteredClient: Handler<operations['getRegisteredClient']> = async (request, reply) => {
  reply.headers(NO_STORE);
  return information(request.server.platform, await registeredClient(request.server.platform, authOf(request)));
};

export const updateRegisteredClient: Handler<operations['updateRegisteredClient']> = async (request, reply) =>
  answering(reply, async () => {
    const { platform } = request.server;
    const current = await registeredClient(platform, authOf(request));
    const body = request.body as S['ClientMetadata'] & { client_id?: unknown; client_secret?: unknown };
    if (body.client_id !== undefined && body.client_id !== current.id)
      throw new RegistrationFailure('invalid_client_metadata', 'client_id is not this client.');
    if (
      body.client_secret !== undefined &&
      (typeof body.client_secret !== 'string' || !current.secret_digest || !platform.secrets.matches(body.client_secret, current.secret_digest))
    ) {
      throw new RegistrationFailure('invalid_client_metadata', 'client_secret is not this client’s.');
    }
    const { redirectUris, registered } = checkMetadata(body);
    if ((registered.token_endpoint_auth_method === 'none') !== (current.client_type === 'public')) {
      throw new RegistrationFailure('invalid_client_metadata', 'token_endpoint_auth_method cannot change between none and a secret; register a new client.');
    }
    const row = await platform.store.db
      .updateTable('connect_clients')
      .set({ name: registered.client_name, redirect_uris: redirectUris, registration_metadata: JSON.stringify(registered), updated_at: platform.now() })
      .where('id', '=', current.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    reply.headers(NO_STORE);
    return information(platform, row);
  });

export const deleteRegisteredClient: Handler<operations['deleteRegisteredClient']> = async (request, reply) => {
  await request.server.platform.store.db.deleteFrom('connect_clients').where('id', '=', authOf(request).clientId!).execute();
  return reply.code(204).send();
};

/** The contract refused the body (a field of the wrong type, a list too long): RFC 7591's error format. */
export function registrationErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const { body, headers } = toProblem(error);
  if (body.status !== 400) {
    if (body.status >= 500) request.log.error({ err: error }, 'request failed');
    return sendProblem(reply, body, headers);
  }
  const first = body.errors?.[0];
  const code = first?.pointer.startsWith('/body/redirect_uris') ? 'invalid_redirect_uri' : 'invalid_client_metadata';
  return sendFailure(reply, new RegistrationFailure(code, first ? `${first.pointer.replace('/body/', '')} ${first.detail}.` : (body.detail ?? body.title)));
}

/**
 * Refusals sent before the route's error handler runs (a body required but missing, answered by
 * the request-body guard as a problem): RFC 7591 §3.2.2's format too, for 400.
 */
export async function registrationFormat(_request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
  if (reply.statusCode !== 400 || typeof payload !== 'string') return payload;
  if (!String(reply.getHeader('content-type') ?? '').startsWith('application/problem+json')) return payload;
  const problem = JSON.parse(payload) as { detail?: string; title?: string };
  reply.headers(NO_STORE).type('application/json');
  return JSON.stringify({ error: 'invalid_client_metadata', error_description: problem.detail ?? problem.title });
}

// ---- Initial access tokens (owner API) -------------------------------------------------------------

type TokenRow = {
  id: string;
  prefix: string;
  description: string | null;
  expires_at: Date;
  revoked_at: Date | null;
  last_used_at: Date | null;
  created_at: Date;
};

const tokenView = (row: TokenRow): S['RegistrationToken'] => ({
  id: row.id,
  prefix: row.prefix,
  description: row.description,
  expires_at: row.expires_at.toISOString(),
  revoked_at: row.revoked_at?.toISOString() ?? null,
  last_used_at: row.last_used_at?.toISOString() ?? null,
  created_at: row.created_at.toISOString(),
});

export const createRegistrationToken: Handler<operations['createRegistrationToken']> = async (request, reply) => {
  const { platform } = request.server;
  const token = `rit_${base62(40)}`;
  const now = platform.now();
  const row = await platform.store.db
    .insertInto('connect_registration_tokens')
    .values({
      id: newId('rgt'),
      workspace_id: authOf(request).workspaceId,
      digest: platform.secrets.digest(token),
      prefix: token.slice(0, PREFIX_LENGTH),
      description: request.body.description ?? null,
      expires_at: new Date(now.getTime() + (request.body.expires_in_days ?? 30) * 86_400_000),
      created_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  reply.code(201).headers(NO_STORE);
  return { ...tokenView(row), token };
};

export const listRegistrationTokens: Handler<operations['listRegistrationTokens']> = async (request) => {
  const rows = await request.server.platform.store.db
    .selectFrom('connect_registration_tokens')
    .selectAll()
    .where('workspace_id', '=', authOf(request).workspaceId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(100)
    .execute();
  return { data: rows.map(tokenView) };
};

export const deleteRegistrationToken: Handler<operations['deleteRegistrationToken']> = async (request, reply) => {
  const { platform } = request.server;
  const row = await platform.store.db
    .updateTable('connect_registration_tokens')
    .set((eb) => ({ revoked_at: eb.fn.coalesce('revoked_at', eb.val(platform.now())) }))
    .where('id', '=', request.params.id)
    .where('workspace_id', '=', authOf(request).workspaceId)
    .returning('id')
    .executeTakeFirst();
  if (!row) throw new HttpProblem(404, 'not-found', 'No initial access token with this id.');
  return reply.code(204).send();
};

// ---- Schemes ---------------------------------------------------------------------------------------

registerScheme(
  'RegistrationInitialToken',
  {
    async verify(request, { app }) {
      const value = authorizationCredential(request, 'Bearer');
      if (!value || !INITIAL_TOKEN.test(value)) return null;
      const { platform } = app;
      const row = await platform.store.db
        .selectFrom('connect_registration_tokens')
        .select(['id', 'workspace_id', 'digest', 'expires_at', 'revoked_at'])
        .where('digest', '=', platform.secrets.digest(value))
        .executeTakeFirst();
      if (!row || !platform.secrets.matches(value, row.digest) || row.revoked_at || row.expires_at.getTime() <= platform.now().getTime()) return null;
      return { workspaceId: row.workspace_id, kind: 'registration_initial', scopes: [], registrationTokenId: row.id };
    },
    challenge: (api) => `Bearer realm="${api}"`,
  },
  { api: 'connect' },
);

registerScheme(
  'RegistrationAccessToken',
  {
    async verify(request, { app }) {
      const value = authorizationCredential(request, 'Bearer');
      const { clientId } = request.params as { clientId?: string };
      if (!value || !REGISTRATION_TOKEN.test(value) || !clientId || !RESOURCE_ID.test(clientId)) return null;
      const { platform } = app;
      const row = await platform.store.db
        .selectFrom('connect_clients')
        .select(['id', 'workspace_id', 'registration_digest'])
        .where('registration_digest', '=', platform.secrets.digest(value))
        .executeTakeFirst();
      // Another client's registration token is no token here: the same 401 (RFC 7592 §3).
      if (!row?.registration_digest || !platform.secrets.matches(value, row.registration_digest) || row.id !== clientId) return null;
      return { workspaceId: row.workspace_id, kind: 'registration_client', scopes: [], clientId: row.id };
    },
    challenge: (api) => `Bearer realm="${api}"`,
  },
  { api: 'connect' },
);
