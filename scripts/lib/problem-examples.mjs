// Shared examples for the error responses the spec documents without one (TypeSpec's
// @opExample ties an example to one request, and nobody writes a 401 and a 429 example for
// every operation). Each is an RFC 9457 problem as the server writes it (titles from
// server/lib/problems.ts, details from the code that raises it), declared once under
// `components.examples` and referenced by `$ref` from every response that needs it, so the
// mocks answer `Prefer: code=401` with a real problem rather than one generated from the schema.
// The example key inside an operation is the component's name; a clash with an example the
// spec names itself stops the generation. Problem response headers without an example get one
// (the challenge an operation's schemes send, a Retry-After).

const TYPE = 'https://chatapp.example/problems/';
const REQUEST_ID = '5f0c6a9e-3b1d-4c2a-9e7f-2d8b4a6c1e30';

const problem = (name, title, status, detail, extra = {}) => ({
  summary: `${status} ${name}`,
  value: { type: `${TYPE}${name}`, title, status, detail, ...extra, request_id: REQUEST_ID },
});
const validation = (detail, pointer, what) => problem('validation', 'Invalid request', 400, detail, { errors: [{ pointer, detail: what }] });
const INVALID = 'One or more inputs are invalid; see errors.';

/** Every shared example, by component name. */
export const PROBLEM_EXAMPLES = {
  validation_unknown_field: validation(INVALID, '/body/nickname', 'is not a known field'),
  validation_not_an_object: validation(INVALID, '/body', 'must be object'),
  validation_limit: validation(INVALID, '/query/limit', 'must be <= 100'),
  validation_two_credentials: validation(
    'Send one credential: X-API-Key or Authorization, once.',
    '/header/authorization',
    'only one of X-API-Key and Authorization may be sent, once',
  ),
  validation_malformed_url: problem('validation', 'Invalid request', 400, 'The request URL is malformed.'),
  unauthorized: problem('unauthorized', 'Unauthorized', 401, 'A valid credential is required.'),
  invalid_signature: problem('invalid-signature', 'Invalid signature', 401, 'The signature header is missing or does not match the raw body.'),
  plan_limit: problem('plan-limit', 'Plan limit reached', 402, "The workspace's plan allows no more of these; remove one or upgrade.", {
    upgrade_url: 'https://chatapp.example/pricing',
  }),
  forbidden: problem('forbidden', 'Forbidden', 403, 'This credential may not do this.'),
  not_found: problem('not-found', 'Not found', 404, 'Nothing with this id exists in this workspace.'),
  conflict: problem('conflict', 'Conflict', 409, 'The resource changed meanwhile; reload it and retry.'),
  expired: problem('expired', 'Expired', 410, 'This has expired; start again.'),
  payload_too_large: problem('payload-too-large', 'Payload too large', 413, 'The body is larger than this operation accepts.'),
  unsupported_media_type: problem('unsupported-media-type', 'Unsupported media type', 415, 'This operation does not accept that Content-Type.'),
  unprocessable: problem('unprocessable', 'Unprocessable request', 422, 'The request is well-formed but cannot be carried out as asked.'),
  rate_limited: problem('rate-limited', 'Too many requests', 429, 'Too many requests; retry after 42 seconds.'),
  provider_error: problem('provider-error', 'Chat provider error', 502, 'The chat provider failed to handle the request.'),
  unavailable: problem('unavailable', 'Service unavailable', 503, 'The database is not reachable.'),
  provider_timeout: problem('provider-error', 'Chat provider error', 504, 'The chat provider did not answer in time; the outcome is unknown. Try again.'),
  insufficient_storage: problem('insufficient-storage', 'Insufficient storage', 507, 'The server has no room left to store the upload; nothing was stored.'),
};

/** One example per scope a credential can lack (403 `forbidden` names it in `required_scope`). */
const forbiddenFor = (scope) => ({
  name: `forbidden_${scope.replace(/[^a-z0-9]+/gi, '_')}`,
  example: problem('forbidden', 'Forbidden', 403, `This credential lacks the ${scope} scope.`, { required_scope: scope }),
});

const BY_STATUS = {
  401: 'unauthorized',
  402: 'plan_limit',
  404: 'not_found',
  409: 'conflict',
  410: 'expired',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'unprocessable',
  429: 'rate_limited',
  502: 'provider_error',
  503: 'unavailable',
  504: 'provider_timeout',
  507: 'insufficient_storage',
};

/** The OAuth endpoints answer RFC 6749 §5.2 errors, not problems. */
const OAUTH_ERROR = {
  summary: '400 invalid_request',
  value: { error: 'invalid_request', error_description: 'token is required.' },
};

const HEADER_EXAMPLES = { 'Retry-After': 42, 'RateLimit-Limit': 600, 'RateLimit-Remaining': 0, 'RateLimit-Reset': 42 };
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

/**
 * Adds the shared examples to `doc` (a 3.0 or 3.1 document of `api`) in place.
 * @returns {number} how many responses got one
 */
export function addProblemExamples(doc, api) {
  const used = new Map();
  let added = 0;
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const security = op.security ?? doc.security ?? [];
      const names = new Set(Object.values(op.responses ?? {}).flatMap((r) => Object.values(r.content ?? {}).flatMap((m) => Object.keys(m.examples ?? {}))));
      for (const [status, response] of Object.entries(op.responses ?? {})) {
        if (!/^[45]\d\d$/.test(status)) continue;
        for (const header of Object.entries(response.headers ?? {})) addHeaderExample(header, api, security);
        const media = Object.entries(response.content ?? {});
        if (!media.length || media.some(([, m]) => m.examples && Object.keys(m.examples).length)) continue;
        for (const [type, m] of media) {
          const chosen = type === 'application/problem+json' ? choose(Number(status), op, method, api, security, doc) : oauthError(type, m);
          if (!chosen) throw new Error(`${api} ${method.toUpperCase()} ${path}: no shared example for ${status} ${type}`);
          if (names.has(chosen.name)) {
            throw new Error(`${api} ${op.operationId}: the spec's own example "${chosen.name}" clashes with the shared one; rename it`);
          }
          names.add(chosen.name);
          if (used.has(chosen.name) && JSON.stringify(used.get(chosen.name)) !== JSON.stringify(chosen.example)) {
            throw new Error(`${api} ${op.operationId}: two different shared examples named ${chosen.name}`);
          }
          used.set(chosen.name, chosen.example);
          m.examples = { [chosen.name]: { $ref: `#/components/examples/${chosen.name}` } };
          added++;
        }
      }
    }
  }
  if (used.size) {
    doc.components ??= {};
    const existing = doc.components.examples ?? {};
    for (const name of used.keys()) if (existing[name]) throw new Error(`${api}: components.examples.${name} exists already`);
    doc.components.examples = Object.fromEntries(Object.entries({ ...existing, ...Object.fromEntries(used) }).sort(([a], [b]) => (a < b ? -1 : 1)));
  }
  return added;
}

function choose(status, op, method, api, security, doc) {
  if (status === 400) return invalidVariant(op, security, doc);
  if (status === 401 && (op.parameters ?? []).some((p) => p.in === 'header' && /signature/i.test(p.name ?? ''))) return pick('invalid_signature');
  if (status === 403) {
    const scope = requiredScope(api, method, security);
    return scope ? forbiddenFor(scope) : pick('forbidden');
  }
  return BY_STATUS[status] ? pick(BY_STATUS[status]) : undefined;
}

const pick = (name) => ({ name, example: PROBLEM_EXAMPLES[name] });

/**
 * The 400 an operation most plausibly answers: a bad body field, a bad limit, a path id that
 * is not an id, two credentials.
 */
function invalidVariant(op, security, doc) {
  const body = op.requestBody?.content?.['application/json']?.schema;
  if (body) return pick(strict(body) ? 'validation_unknown_field' : 'validation_not_an_object');
  if ((op.parameters ?? []).some((p) => p.in === 'query' && p.name === 'limit')) return pick('validation_limit');
  for (const param of op.parameters ?? []) {
    const pattern = param.in === 'path' ? schemaOf(doc, param.schema)?.pattern : undefined;
    if (pattern) {
      const name = `validation_path_${param.name}`;
      return { name, example: validation(INVALID, `/path/${param.name}`, `must match pattern "${pattern}"`) };
    }
  }
  if (security.some((r) => Object.keys(r).length)) return pick('validation_two_credentials');
  return pick('validation_malformed_url');
}

/** A schema, through one `$ref` (path parameters refer to scalars such as ResourceId). */
function schemaOf(doc, schema) {
  if (!schema?.$ref) return schema;
  return schema.$ref
    .slice(2)
    .split('/')
    .reduce((node, key) => node?.[key], doc);
}

// A body refuses unknown fields when its schema (a $ref is taken as a request model: they all
// end with `...Record<never>`) says so.
function strict(schema) {
  return Boolean(schema.$ref) || schema.additionalProperties === false || schema.unevaluatedProperties === false || Boolean(schema.not);
}

/**
 * The scope a 403 names (server/auth/authenticate.ts): a Messaging API key needs
 * `messaging:read` for reads and `messaging:write` otherwise; a Connect token the scopes its
 * requirement lists.
 */
function requiredScope(api, method, security) {
  const listed = security.flatMap((r) => Object.values(r).flat());
  if (listed.length) return listed[0];
  const byKey = security.some((r) => Object.keys(r).some((s) => s.startsWith('ApiKey')));
  if (api === 'messaging' && byKey) return method === 'get' ? 'messaging:read' : 'messaging:write';
  return undefined;
}

function oauthError(type, media) {
  if (type !== 'application/json' || !/OAuthError$/.test(media.schema?.$ref ?? '')) return undefined;
  return { name: 'invalid_request', example: OAUTH_ERROR };
}

function addHeaderExample([name, header], api, security) {
  if (header.$ref || header.example !== undefined || header.examples) return; // a $ref has its own
  if (name === 'WWW-Authenticate') header.example = challenge(api, security);
  else if (name in HEADER_EXAMPLES) header.example = HEADER_EXAMPLES[name];
}

/** The challenges the server sends for an operation's schemes (server/auth/authenticate.ts). */
function challenge(api, security) {
  const schemes = new Set(security.flatMap((r) => Object.keys(r)));
  const list = new Set();
  for (const scheme of schemes) {
    if (scheme.startsWith('ApiKey')) list.add(`ApiKey realm="${api}"`);
    else if (scheme === 'ConnectOAuth') list.add(`Bearer realm="${api}", error="invalid_token"`);
    else list.add(`Bearer realm="${api}"`);
  }
  return list.size ? [...list].join(', ') : `Bearer realm="${api}"`;
}
