// Messaging inbox: nothing to start beyond the contract routes (chats are kept by the send path
// and the provider webhook, in their own transactions).
import type { FastifyInstance } from 'fastify';

export async function setup(_app: FastifyInstance): Promise<void> {}
