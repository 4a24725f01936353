// The provider webhook's gate: the signature decides before any limit, parser or store does.
// The provider sends every message and status of every account from a few addresses (behind its
// load balancer, one), so a per-IP limit would refuse real traffic: a delivery whose
// `X-Hub-Signature-256` matches its raw body is never counted against its address (catalogue
// bad-inputs E12). What fails the check is refused cheaply and counted per client IP at the public per-IP
// rate, 429 past it (bad-inputs E13): a missing or malformed header before the body is read, a wrong HMAC
// as soon as the bytes are in, before they are parsed, validated or stored (bad-inputs E14).
import { normalizeIP } from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify';
import { HttpProblem } from '#server/lib/problems.js';
import { verifySha256Header } from '#server/lib/signatures.js';
import { limited } from '#server/plugins/rate-limits.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Refused deliveries per client IP (the rate-limit plugin's memory store); setupProviderSignature. */
    providerRefusals: Counter;
  }
  interface FastifyRequest {
    /** Set once `X-Hub-Signature-256` matched the raw body (provider webhook only). */
    providerSigned?: boolean;
  }
}

export const SIGNATURE_CHALLENGE = { 'www-authenticate': 'Signature realm="provider-webhook"' };
const HEADER = /^sha256=[0-9a-f]{64}$/i;
const WRONG = 'X-Hub-Signature-256 is missing or does not match the raw body.';

type Counter = ReturnType<FastifyInstance['createRateLimit']>;

/** The per-IP count of refusals, one bucket store per app; run by setupProviderInbox. */
export function setupProviderSignature(app: FastifyInstance): void {
  // IPv6 clients per /64, as every per-IP bucket here.
  app.decorate(
    'providerRefusals',
    app.createRateLimit({ max: app.config.rateLimitIpPerMinute, timeWindow: 60_000, keyGenerator: (r) => `provider-refused:${normalizeIP(r.ip)}` }),
  );
}

/** 401 `invalid-signature`, or 429 once this address has had its share of refusals this minute. */
async function refusal(request: FastifyRequest): Promise<HttpProblem> {
  const count = await request.server.providerRefusals(request);
  if (!count.isAllowed && count.isExceeded) {
    request.log.warn({ limiter: 'provider-refused' }, 'provider webhook: too many unsigned or badly signed deliveries from this IP');
    return limited(count.ttl);
  }
  return new HttpProblem(401, 'invalid-signature', WRONG, {}, SIGNATURE_CHALLENGE);
}

/** Whether the delivery's bytes carry the app secret's signature (called by the JSON parser, before it parses). */
async function checkSignature(request: FastifyRequest, raw: Buffer): Promise<void> {
  const header = request.headers['x-hub-signature-256'] as string; // its shape was checked on arrival
  // bad-inputs E1/E2: the HMAC covers the bytes received, never a re-serialisation of the parsed body.
  if (!verifySha256Header(header, request.server.platform.providerAppSecret, raw)) throw await refusal(request);
  request.providerSigned = true;
}

/**
 * Route options of `receiveProviderWebhook`: out of the global per-IP limit, a header of the
 * wrong shape refused on arrival, and the HMAC checked by the JSON parser before it parses.
 */
export const providerWebhookRoute: Partial<RouteOptions> = {
  config: { rateLimit: false },
  onRequest: async (request) => {
    const header = request.headers['x-hub-signature-256'];
    if (typeof header !== 'string' || !HEADER.test(header)) throw await refusal(request);
    request.beforeParse = checkSignature;
  },
};
