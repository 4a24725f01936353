// Authentication of an operation from its contract `security`: one requirement of the list
// must be met (OR), every scheme within a requirement (AND). Each scheme name maps to a verifier
// in a registry; APIs add theirs with `registerScheme` (ConnectOAuth, SubscribeToken,
// OAuthClientBasic, Login app keys), and a scheme nobody registered is never satisfied.
//
// Every failure answers the same 401 body, whatever was wrong (missing, malformed, unknown,
// revoked, expired, of the wrong kind), with a `WWW-Authenticate` naming the accepted schemes.
// A valid credential without the needed scope answers 403 naming the scope.
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type { Operation, SecurityRequirement } from '../contract.js';
import { setCapped } from '../lib/capped-map.js';
import { HttpProblem } from '../lib/problems.js';
import { apiKeyVerifier, type VerifiedKey } from './api-keys.js';
import { markDeadCredential, recordAuthFailure, type CredentialHeader } from './auth-failures.js';
import { requestCredentialDigest } from './credential-digest.js';
import { verifyOwnerToken, type OwnerClaims } from './owner-jwt.js';

export type { SecurityRequirement };

/** Kinds of caller; other APIs add theirs by augmenting this interface. */
export interface AuthKinds {
  api_key: true;
  owner: true;
}

export interface AuthContext {
  workspaceId: string;
  kind: keyof AuthKinds;
  keyId?: string;
  ownerId?: string;
  scopes: string[];
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Who the request acts for; set by the operation's authenticator. */
    auth?: AuthContext;
  }
}

export interface SchemeContext {
  app: FastifyInstance;
  api: string;
  operationId: string;
}

/** A scheme's answer: at once when its cache knows the credential, else once it is looked up. */
export type Verified = AuthContext | null | Promise<AuthContext | null>;

export interface SecurityScheme {
  /**
   * The caller the request's credential proves, or null. Bad input is null, never an error. A
   * scheme answers without a promise when it can (a credential it verified recently), so the
   * usual request passes authentication without a turn of the event loop.
   */
  verify(request: FastifyRequest, context: SchemeContext): Verified;
  /** The `WWW-Authenticate` challenge for this scheme on `api`. */
  challenge(api: string): string;
  /** The `WWW-Authenticate` challenge of a 403 for a missing scope (RFC 6750 §3.1), if the scheme has one. */
  insufficientScope?(api: string, scope: string): string;
}

const schemes = new Map<string, SecurityScheme>();

/** Registers a scheme for every API, or for one (`api`), which then wins over the general one. */
export function registerScheme(name: string, scheme: SecurityScheme, options: { api?: string } = {}): void {
  schemes.set(`${options.api ?? '*'}:${name}`, scheme);
}

function schemeFor(api: string, name: string): SecurityScheme | undefined {
  return schemes.get(`${api}:${name}`) ?? schemes.get(`*:${name}`);
}

/**
 * The scope an API key needs for an operation, the one place this rule lives: on Messaging,
 * reads (GET, HEAD) need `messaging:read` and everything else `messaging:write`.
 */
export function requiredKeyScope(api: string, method: string): string | undefined {
  if (api !== 'messaging') return undefined;
  return method === 'GET' || method === 'HEAD' ? 'messaging:read' : 'messaging:write';
}

/** The credential of `Authorization: <scheme> <value>`; the scheme name is case-insensitive (RFC 9110 §11.1). */
export function authorizationCredential(request: FastifyRequest, scheme: string): string | undefined {
  const header = request.headers.authorization;
  if (typeof header !== 'string') return undefined;
  const match = /^(\S+) +(\S+) *$/.exec(header);
  if (!match || match[1]!.toLowerCase() !== scheme.toLowerCase()) return undefined;
  return match[2];
}

export function unauthorized(challenges: string[]): HttpProblem {
  return new HttpProblem(401, 'unauthorized', 'A valid credential is required.', {}, { 'www-authenticate': challenges.join(', ') });
}

type Outcome = { auth?: AuthContext; forbidden?: HttpProblem };
type OnRequestHook = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void;

/**
 * The `onRequest` hook of an operation: it runs before any byte of the body is read, so a call
 * without a valid credential answers 401 whatever its path ids or body, and an unauthenticated
 * upload is never read. A request carrying two credentials is refused first (below). A callback
 * hook: when every scheme tried answers at once, so does the hook.
 */
export function authenticator(app: FastifyInstance, operation: Pick<Operation, 'api' | 'operationId' | 'security'>): OnRequestHook {
  const { api, operationId, security: requirements } = operation;
  if (requirements.length === 0) return (_request, _reply, done) => done();
  const isPublic = requirements.some((r) => Object.keys(r).length === 0);
  const context: SchemeContext = { app, api, operationId };
  // Worked out once per operation: each requirement's schemes and scopes, and the 401's challenges.
  const compiled = requirements.map((requirement) => Object.entries(requirement).map(([name, scopes]) => ({ scheme: schemeFor(api, name), scopes })));
  const failed = async (request: FastifyRequest, forbidden: HttpProblem | undefined): Promise<never> => {
    if (forbidden) throw forbidden;
    // Per IP, or per dead credential and workspace (bad-inputs K3, K10-K12, ./auth-failures.ts).
    throw (await recordAuthFailure(request)) ?? unauthorized(challenges(api, requirements));
  };
  /**
   * The requirements from `index` on, in order: the first met sets the caller. Answers at once
   * while every scheme tried does; a promise (settled when done, rejected with the 403 or 401)
   * once one needs one, or once every requirement failed.
   */
  const attempt = (request: FastifyRequest, index: number, forbidden?: HttpProblem): void | Promise<void> => {
    for (let i = index; i < compiled.length; i++) {
      const outcome = meet(request, compiled[i]!, context);
      if (outcome instanceof Promise) {
        return outcome.then((o) => {
          if (o.auth) request.auth = o.auth;
          else return attempt(request, i + 1, forbidden ?? o.forbidden);
        });
      }
      if (outcome.auth) {
        request.auth = outcome.auth;
        return;
      }
      forbidden ??= outcome.forbidden;
    }
    return failed(request, forbidden);
  };
  return (request, _reply, done) => {
    try {
      refuseTwoCredentials(request);
    } catch (error) {
      return done(error as Error);
    }
    if (isPublic) return done();
    const pending = attempt(request, 0);
    if (pending) pending.then(() => done(), done);
    else done();
  };
}

const CREDENTIAL_HEADERS = new Set(['authorization', 'x-api-key']);

/**
 * More than one credential (`X-API-Key` and `Authorization`, or either twice) is 400 before any
 * key is looked up: which one the request acts with would otherwise depend on the order schemes
 * are tried (RFC 6750 §3.1 answers `invalid_request` to more than one method). Node keeps only the
 * first `Authorization` of a request, so the raw headers are counted.
 */
function refuseTwoCredentials(request: FastifyRequest): void {
  const raw = request.raw.rawHeaders;
  let count = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    // Only a name of a credential header's length is lowercased (no new string for the others).
    if ((name.length === 13 || name.length === 9) && CREDENTIAL_HEADERS.has(name.toLowerCase())) count++;
  }
  if (count > 1) {
    throw new HttpProblem(400, 'validation', 'Send one credential: X-API-Key or Authorization, once.', {
      errors: [{ pointer: '/header/authorization', detail: 'only one of X-API-Key and Authorization may be sent, once' }],
    });
  }
}

type CompiledRequirement = { scheme: SecurityScheme | undefined; scopes: string[] }[];

/** One requirement (every scheme in it), at once while its schemes answer at once. */
function meet(request: FastifyRequest, requirement: CompiledRequirement, context: SchemeContext, from = 0, first?: AuthContext): Outcome | Promise<Outcome> {
  for (let i = from; i < requirement.length; i++) {
    const { scheme, scopes } = requirement[i]!;
    const verified = scheme ? scheme.verify(request, context) : null;
    if (verified instanceof Promise) {
      return verified.then((auth) => {
        const outcome = judge(request, context, scheme, scopes, auth);
        return outcome.auth ? meet(request, requirement, context, i + 1, first ?? outcome.auth) : outcome;
      });
    }
    const outcome = judge(request, context, scheme, scopes, verified);
    if (!outcome.auth) return outcome;
    first ??= outcome.auth;
  }
  return { auth: first };
}

/** A scheme's caller against the scopes the operation needs: the caller, a 403, or nothing. */
function judge(request: FastifyRequest, context: SchemeContext, scheme: SecurityScheme | undefined, scopes: string[], auth: AuthContext | null): Outcome {
  if (!auth) return {};
  const missing = missingScope(auth, scopes, context.api, request.method);
  if (!missing) return { auth };
  const challenge = scheme?.insufficientScope?.(context.api, missing);
  return {
    forbidden: new HttpProblem(
      403,
      'forbidden',
      `This credential lacks the ${missing} scope.`,
      { required_scope: missing },
      challenge ? { 'www-authenticate': challenge } : {},
    ),
  };
}

function missingScope(auth: AuthContext, scopes: string[], api: string, method: string): string | undefined {
  if (auth.kind === 'owner') return undefined; // owners may do everything in their workspace
  const needed = [...scopes, ...(auth.kind === 'api_key' ? [requiredKeyScope(api, method)] : [])];
  return needed.find((scope) => scope !== undefined && !auth.scopes.includes(scope));
}

function challenges(api: string, requirements: SecurityRequirement[]): string[] {
  const names = new Set(requirements.flatMap((r) => Object.keys(r)));
  const list = new Set([...names].flatMap((name) => schemeFor(api, name)?.challenge(api) ?? []));
  // The contract requires the header on every 401; say Bearer when no registered scheme applies.
  return list.size ? [...list] : [`Bearer realm="${api}"`];
}

// The schemes the platform provides. API keys open the API of their kind only (a Messaging key
// is no Login key); keys come from headers only, never the query or a cookie.
function apiKey(request: FastifyRequest, header: CredentialHeader, secret: string | undefined, context: SchemeContext): Verified {
  if (!secret) return null;
  const { platform } = context.app;
  const key = apiKeyVerifier(platform).verify(
    secret,
    context.api,
    (workspaceId) => markDeadCredential(request, header, workspaceId),
    requestCredentialDigest(request, secret, platform.credentialDigest), // the rate limit's bucket key too
  );
  return key instanceof Promise ? key.then(apiKeyCaller) : apiKeyCaller(key);
}

const apiKeyCaller = (key: VerifiedKey | null): AuthContext | null =>
  key && { workspaceId: key.workspaceId, kind: 'api_key', keyId: key.id, scopes: key.scopes };

const apiKeyChallenge = (api: string) => `ApiKey realm="${api}"`;

// The contract's one API-key scheme, `ApiKeyHeader` (an OpenAPI `apiKey` in `X-API-Key`): its
// description also offers `Authorization: ApiKey <key>`, which OpenAPI cannot state as a scheme
// (it ignores an apiKey named Authorization), so the verifier reads either header.
registerScheme('ApiKeyHeader', {
  verify: (request, context) => {
    const [header, secret] = apiKeyHeader(request);
    return apiKey(request, header, secret, context);
  },
  challenge: apiKeyChallenge,
});

/** The API key a request carries: `X-API-Key`, else `Authorization: ApiKey <key>`. */
export function apiKeyHeader(request: FastifyRequest): [CredentialHeader, string | undefined] {
  const header = request.headers['x-api-key'];
  if (typeof header === 'string') return ['x-api-key', header];
  return ['authorization', authorizationCredential(request, 'ApiKey')];
}

// Owners found recently, per server instance: owners are never deleted today, and a removal
// would take effect on every instance within OWNER_CACHE_MS.
const OWNER_CACHE_MS = 5_000;
const OWNER_CACHE_MAX = 10_000;

registerScheme('OwnerBearer', {
  verify(request, { app }) {
    const token = authorizationCredential(request, 'Bearer');
    if (!token) return null;
    const dead = (workspaceId: string) => markDeadCredential(request, 'authorization', workspaceId);
    const digest = requestCredentialDigest(request, token, app.platform.credentialDigest); // the rate limit's bucket key too
    const claims = verifyOwnerToken(app.platform, token, 'owner-api', dead, digest);
    return claims instanceof Promise ? claims.then((c) => ownerCaller(app, c, dead)) : ownerCaller(app, claims, dead);
  },
  challenge: (api) => `Bearer realm="${api}"`,
});

/**
 * A token outlives nothing: the owner must still exist in the workspace it names (checked at
 * most every OWNER_CACHE_MS per owner, as API keys are: a query per request otherwise).
 */
function ownerCaller(app: FastifyInstance, claims: OwnerClaims | null, dead: (workspaceId: string) => void): Verified {
  if (!claims) return null;
  const caller: AuthContext = { workspaceId: claims.workspaceId, kind: 'owner', ownerId: claims.ownerId, scopes: [] };
  const cache = app.platform.ownerCache;
  const cacheKey = `${claims.workspaceId}:${claims.ownerId}`;
  const now = Date.now();
  if ((cache.get(cacheKey) ?? 0) > now) return caller;
  return app.platform.store.db
    .selectFrom('owners')
    .select('id')
    .where('id', '=', claims.ownerId)
    .where('workspace_id', '=', claims.workspaceId)
    .executeTakeFirst()
    .then((owner) => {
      if (!owner) {
        dead(claims.workspaceId); // signed by us for an owner since removed
        return null;
      }
      setCapped(cache, cacheKey, now + OWNER_CACHE_MS, OWNER_CACHE_MAX);
      return caller;
    });
}

/** The caller of an authenticated operation (its authenticator ran before the handler). */
export function authOf(request: FastifyRequest): AuthContext {
  if (!request.auth) throw new Error(`no authenticated caller on ${request.method} ${request.routeOptions.url}`);
  return request.auth;
}
