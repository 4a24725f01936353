// The OAuthClientBasic scheme on the Connect API's client-level operations (client webhook
// endpoints): HTTP Basic with a confidential client's id and secret, checked as the token
// endpoint checks them (../connect/oauth/client-auth.ts). The caller is the client, acting in the
// workspace that registered it. A public client has no secret, so it is never authenticated
// here; every failure is null, which the pipeline answers with the same 401.
import type { FastifyRequest } from 'fastify';
import { authenticateClient } from '#server/apis/connect/oauth/client-auth.js';
import { registerScheme, type AuthContext } from '#server/auth/authenticate.js';
import type { Platform } from '#server/platform.js';

declare module '../../auth/authenticate.js' {
  interface AuthKinds {
    connect_client: true;
  }
}

export async function verifyClientBasic(platform: Platform, request: FastifyRequest): Promise<AuthContext | null> {
  const header = request.headers.authorization;
  if (typeof header !== 'string' || !/^basic\s/i.test(header)) return null;
  try {
    const client = await authenticateClient(platform, request);
    if (client.client_type !== 'confidential') return null;
    return { workspaceId: client.workspace_id, kind: 'connect_client', clientId: client.id, scopes: [] };
  } catch {
    return null;
  }
}

registerScheme(
  'OAuthClientBasic',
  {
    verify: (request, { app }) => verifyClientBasic(app.platform, request),
    challenge: (api) => `Basic realm="${api}"`,
  },
  { api: 'connect' },
);
