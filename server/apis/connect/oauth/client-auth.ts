// Client authentication at the token and revocation endpoints (RFC 6749 §2.3): HTTP Basic with
// the form-urlencoded client id and secret (§2.3.1), or `client_id` and `client_secret` in the
// body, never both; a public client sends only `client_id`. Every failure is the same
// `invalid_client`, whatever was wrong, so the answer tells nothing about which clients exist.
import type { FastifyRequest } from 'fastify';
import type { Platform } from '#server/platform.js';
import { clientById, type ClientRow } from './clients.js';
import { OAuthFailure, invalidRequest } from './oauth-errors.js';

interface Credentials {
  clientId?: string;
  clientSecret?: string;
}

/** Form-urlencoded decoding of one Basic credential part: `+` is a space (§2.3.1). */
function formDecode(value: string): string | undefined {
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '));
  } catch {
    return undefined;
  }
}

/** A string parameter of the body, or undefined; a non-string or over-long one is invalid_request. */
export function param(body: unknown, name: string, max: number): string | undefined {
  const value = body && typeof body === 'object' ? (body as Record<string, unknown>)[name] : undefined;
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string') throw invalidRequest(`${name} must be a single string.`);
  if (value.length > max) throw invalidRequest(`${name} is longer than ${max} characters.`);
  return value;
}

function credentials(request: FastifyRequest): Credentials {
  const header = request.headers.authorization;
  const bodyId = param(request.body, 'client_id', 128);
  const bodySecret = param(request.body, 'client_secret', 256);
  if (typeof header === 'string' && /^basic\s/i.test(header)) {
    const failed = new OAuthFailure('invalid_client', 'Client authentication failed.');
    const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw failed;
    const clientId = formDecode(decoded.slice(0, colon));
    const clientSecret = formDecode(decoded.slice(colon + 1));
    if (!clientId || clientSecret === undefined) throw failed;
    if (bodySecret !== undefined) throw invalidRequest('Use one client authentication method: HTTP Basic or the body, not both.');
    if (bodyId !== undefined && bodyId !== clientId) throw invalidRequest('client_id in the body differs from the one in HTTP Basic.');
    return { clientId, clientSecret };
  }
  return { clientId: bodyId, clientSecret: bodySecret };
}

/** The authenticated client of a token or revocation request, or an `invalid_client` failure. */
export async function authenticateClient(platform: Platform, request: FastifyRequest): Promise<ClientRow> {
  const { clientId, clientSecret } = credentials(request);
  const failed = new OAuthFailure('invalid_client', clientId ? 'Client authentication failed.' : 'Client authentication is required.');
  if (!clientId) throw failed;
  const client = await clientById(platform, clientId);
  if (!client) throw failed;
  if (client.client_type === 'public') {
    if (clientSecret) throw failed; // a public client has no secret to present
    return client;
  }
  if (!clientSecret || !client.secret_digest || !platform.secrets.matches(clientSecret, client.secret_digest)) throw failed;
  return client;
}
