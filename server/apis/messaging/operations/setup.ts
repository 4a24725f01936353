// Start-up of packs and operations: the industry packs are read and checked now (a broken pack
// stops the server with its rule named), and chats are placed on kanban funnels as contacts write in.
import type { FastifyInstance } from 'fastify';
import { industryPacks } from '../packs/catalog.js';
import { placeInboundChat } from './kanban.js';

export async function setup(app: FastifyInstance): Promise<void> {
  industryPacks();
  const { platform } = app;
  const unsubscribe = platform.bus.subscribe(
    'message.received',
    (event) => placeInboundChat(platform, event).catch((error) => app.log.error({ err: error }, 'kanban placement failed')),
    { background: true },
  );
  app.addHook('onClose', async () => unsubscribe());
}
