// Outbound webhook destinations (signing) registered with the outbox.
import type { FastifyInstance } from 'fastify';

export async function setup(_app: FastifyInstance): Promise<void> {}
