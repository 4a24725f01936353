// A request hashes the credential it presents once: the verifier's cache key and the rate
// limit's bucket key are the same keyed digest (server/auth/credential-digest.ts).
import { hash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { credentialDigester, requestCredentialDigest } from '#server/auth/credential-digest.js';

describe('credential digest', () => {
  it('is keyed: not the plain SHA-256, and another secret gives another digest', () => {
    const digest = credentialDigester('secret-a');
    expect(digest('mk_x')).toMatch(/^[\w-]{43}$/);
    expect(digest('mk_x')).not.toBe(hash('sha256', 'mk_x', 'base64url'));
    expect(credentialDigester('secret-b')('mk_x')).not.toBe(digest('mk_x'));
  });

  it('is computed once per request and credential', () => {
    let calls = 0;
    const digest = (credential: string) => `${++calls}:${credential}`;
    const request = {} as never;
    expect(requestCredentialDigest(request, 'mk_a', digest)).toBe('1:mk_a');
    expect(requestCredentialDigest(request, 'mk_a', digest)).toBe('1:mk_a');
    // Another credential, or another digester, is never answered from the memo.
    expect(requestCredentialDigest(request, 'mk_b', digest)).toBe('2:mk_b');
    expect(requestCredentialDigest(request, 'mk_b', (c) => `other:${c}`)).toBe('other:mk_b');
    expect(requestCredentialDigest({} as never, 'mk_b', digest)).toBe('3:mk_b');
  });
});
