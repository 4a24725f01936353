// Connect OAuth: clients and grants (owner API), authorize, token and revocation. The bearer
// scheme for the rest of the Connect API is registered by ./bearer.js on import.
import type { operations } from '#generated/connect/types.js';
import { authOf } from '#server/auth/authenticate.js';
import type { Handlers } from '#server/lib/handler-types.js';
import './bearer.js';
import { createClient, deleteClient, findClient, clientView, listClients, rotateClientSecret, updateClient } from './clients.js';
import { authorize } from './consent.js';
import { listGrants, revokeGrant } from './grants.js';
import { introspectToken } from './introspect.js';
import {
  createRegistrationToken,
  deleteRegisteredClient,
  deleteRegistrationToken,
  getRegisteredClient,
  listRegistrationTokens,
  registerClient,
  updateRegisteredClient,
} from './registration.js';
import { createToken, revokeToken } from './token.js';

export const oauthHandlers: Handlers<operations> = {
  async createConnectClient(request, reply) {
    const created = await createClient(request.server.platform, authOf(request).workspaceId, request.body);
    reply.code(201).headers({ location: `/api/connect/clients/${created.client_id}`, 'cache-control': 'no-store' });
    return created;
  },
  async listConnectClients(request) {
    return listClients(request.server.platform, authOf(request).workspaceId, request.query ?? {});
  },
  async getConnectClient(request) {
    return clientView(await findClient(request.server.platform, authOf(request).workspaceId, request.params.clientId));
  },
  async updateConnectClient(request) {
    return updateClient(request.server.platform, authOf(request).workspaceId, request.params.clientId, request.body);
  },
  async rotateConnectClientSecret(request, reply) {
    reply.header('cache-control', 'no-store');
    return rotateClientSecret(request.server.platform, authOf(request).workspaceId, request.params.clientId);
  },
  async deleteConnectClient(request, reply) {
    await deleteClient(request.server.platform, authOf(request).workspaceId, request.params.clientId);
    return reply.code(204).send();
  },
  async listGrants(request) {
    return listGrants(request.server.platform, authOf(request).workspaceId, request.query ?? {});
  },
  async revokeGrant(request) {
    return revokeGrant(request.server.platform, authOf(request).workspaceId, request.params.grantId);
  },
  authorize,
  createToken,
  revokeToken,
  introspectToken,
  registerClient,
  getRegisteredClient,
  updateRegisteredClient,
  deleteRegisteredClient,
  createRegistrationToken,
  listRegistrationTokens,
  deleteRegistrationToken,
};
