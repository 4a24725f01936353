// Messaging configuration start-up work.
import type { FastifyInstance } from 'fastify';

export async function setup(_app: FastifyInstance): Promise<void> {}
