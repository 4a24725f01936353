// Messaging and Login have no handlers yet (their operations answer 501 and skip auth), so the
// authentication cases for them run the real authenticator on stand-in routes, over the real
// app's platform and store, with the contract's security requirements for those operations.
import Fastify, { type FastifyInstance } from 'fastify';
import { authenticator, type SecurityRequirement } from '#server/auth/authenticate.js';
import problems from '#server/plugins/problems.js';

const API_KEY: SecurityRequirement[] = [{ ApiKeyHeader: [] }];

export async function authHarness(app: FastifyInstance): Promise<FastifyInstance> {
  const harness = Fastify();
  harness.decorate('platform', app.platform);
  harness.decorate('config', app.config);
  harness.decorate('loginKeys', app.loginKeys); // the app's cache, which its rotations clear
  await harness.register(problems);
  const echo = async (request: { auth?: unknown }) => ({ auth: request.auth });
  harness.get('/api/contacts', { onRequest: authenticator(harness, { api: 'messaging', operationId: 'listContacts', security: API_KEY }) }, echo);
  harness.post('/api/contacts', { onRequest: authenticator(harness, { api: 'messaging', operationId: 'createContact', security: API_KEY }) }, echo);
  harness.post('/v1/auth/verify-token', { onRequest: authenticator(harness, { api: 'login', operationId: 'verifyToken', security: API_KEY }) }, echo);
  harness.get(
    '/connect-only',
    { onRequest: authenticator(harness, { api: 'connect', operationId: 'listGrants', security: [{ ConnectOAuth: ['analytics:read'] }] }) },
    echo,
  );
  await harness.ready();
  return harness;
}
