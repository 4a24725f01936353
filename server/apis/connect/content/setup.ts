// Connect content routes outside the contract: the public viewer /l/<slug> and its activity beacons.
import type { FastifyInstance } from 'fastify';

export async function setup(_app: FastifyInstance): Promise<void> {}
