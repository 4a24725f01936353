// Tokens signed with the server's real login key, carrying claims the server would never issue:
// the verification tests forge them to show each claim is checked, not only the signature.
import { importJWK, SignJWT, type JWK } from 'jose';
import type { FastifyInstance } from 'fastify';
import type {} from '#server/apis/login/tokens.js';

export async function forgeLoginToken(app: FastifyInstance, claims: Record<string, unknown>, header: Record<string, unknown> = {}): Promise<string> {
  const { platform } = app;
  const { kid } = await app.loginSigningKeys.ring(); // generates the key the first time
  const row = await platform.store.db.selectFrom('login_signing_keys').select('private_jwk_enc').where('kid', '=', kid).executeTakeFirstOrThrow();
  const key = await importJWK(JSON.parse(platform.secrets.decrypt(row.private_jwk_enc)) as JWK, 'ES256');
  return new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid, ...header }).sign(key);
}
