// Connect OAuth routes outside the contract (consent form POST) and auth schemes.
import type { FastifyInstance } from 'fastify';

export async function setup(_app: FastifyInstance): Promise<void> {}
