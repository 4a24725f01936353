// Messaging inbox: inbound messages and statuses from the bus into chats.
import type { FastifyInstance } from 'fastify';

export async function setup(_app: FastifyInstance): Promise<void> {}
