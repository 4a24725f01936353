// Start-up of packs and operations: the industry packs are read and checked now (a broken pack
// stops the server with its rule named), and chats are placed on kanban funnels as contacts write
// in (an inbound step: in the transaction that stores the message).
import type { FastifyInstance } from 'fastify';
import { registerInboundStep } from '#server/events/inbound-steps.js';
import { industryPacks } from '../packs/catalog.js';
import { placeInboundChat } from './kanban.js';

export async function setup(app: FastifyInstance): Promise<void> {
  industryPacks();
  const { platform } = app;
  const unsubscribe = registerInboundStep(platform, 'kanban', placeInboundChat);
  app.addHook('onClose', async () => unsubscribe());
}
