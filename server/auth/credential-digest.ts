// One digest per request for the credential it presents. The verifiers' caches (API keys, owner
// tokens) and the rate limit's bucket are all keyed by the same SHA-256 of a secret followed by
// the credential, computed once per request and remembered on it: a request with a known
// credential costs one hash, not one per place that needs a key.
//
// Keyed (a secret prefix), so neither the credential nor anything that could be checked against a
// guess of it is kept in memory, stored in Redis or logged. In memory the secret lives only in
// this process (caches and limits are per instance, so it need not survive a restart); with Redis
// every instance derives the same one from SECRET_KEY, so that the fleet fills one bucket per
// credential. The digest is never given to anyone to verify, so the prefix construction needs no
// HMAC, and one-shot hash() is much cheaper than createHmac() on every request.
import { hash, randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';

/** The digest of a credential: base64url of SHA-256 over a secret and the credential. */
export type CredentialDigest = (credential: string) => string;

export function credentialDigester(secret: string = randomBytes(32).toString('base64url')): CredentialDigest {
  return (credential) => hash('sha256', secret + credential, 'base64url');
}

interface Remembered {
  of: CredentialDigest;
  credential: string;
  digest: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The last credential digested for this request (requestCredentialDigest). */
    credentialDigestMemo: Remembered | null;
  }
}

/** The request decoration the digest is remembered in; once per app, before it is ready. */
export function decorateCredentialDigest(app: FastifyInstance): void {
  app.decorateRequest('credentialDigestMemo', null);
}

/**
 * `digest(credential)`, computed once per request: authentication digests the credential to find
 * it in its cache, and the rate limit that follows reads the same digest for its bucket.
 */
export function requestCredentialDigest(request: FastifyRequest, credential: string, digest: CredentialDigest): string {
  const memo = request.credentialDigestMemo;
  if (memo && memo.of === digest && memo.credential === credential) return memo.digest;
  const value = digest(credential);
  request.credentialDigestMemo = { of: digest, credential, digest: value };
  return value;
}
