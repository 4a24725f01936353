// Media from the device: the multipart handling of the two routes that take a file.
import type { FastifyInstance } from 'fastify';
import { captureMediaParts } from './parts.js';

export async function setup(app: FastifyInstance): Promise<void> {
  captureMediaParts(app, [
    { method: 'POST', url: '/api/chatapp/media' },
    { method: 'POST', url: '/api/chatapp/send' },
  ]);
}
