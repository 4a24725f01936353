// Bots plug into the inbound dispatcher (automation/responders.ts): keyword bots at 30, schedule
// bots at 35, the chatbot at 40. Unregistered when the app closes.
import type { FastifyInstance } from 'fastify';
import { registerInboundResponder } from '../automation/responders.js';
import { chatbotResponder } from './chatbot-responder.js';
import { keywordResponder, scheduleResponder } from './message-bot-responder.js';

export async function setup(app: FastifyInstance): Promise<void> {
  const log = app.log.child({ area: 'bots' });
  const off = [keywordResponder(log), scheduleResponder(log), chatbotResponder(log)].map((r) => registerInboundResponder(app, r));
  app.addHook('onClose', async () => off.forEach((f) => f()));
}
