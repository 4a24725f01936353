// Forms plug into the inbound dispatcher: submissions are stored at order 5, before any flow.
import type { FastifyInstance } from 'fastify';
import { registerInboundResponder } from '../automation/responders.js';
import { submissionResponder } from './submissions.js';

export async function setup(app: FastifyInstance): Promise<void> {
  const off = registerInboundResponder(app, submissionResponder(app.log.child({ area: 'forms' })));
  app.addHook('onClose', async () => off());
}
