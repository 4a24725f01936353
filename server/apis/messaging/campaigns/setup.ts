// Campaign workers: durable, rate-limited sending in every server instance, stopped on close.
// Delivery progress (statuses moving recipients forward) is in recipient-status.ts.
import type { FastifyInstance } from 'fastify';
import { CampaignWorker } from './worker.js';

export async function setup(app: FastifyInstance): Promise<void> {
  const platform = app.platform;
  const worker = new CampaignWorker({
    platform,
    leaseMs: app.config.workers.campaignLeaseMs,
    pollMs: app.config.workers.campaignPollMs,
    idleMs: app.config.workers.idleMs,
    log: app.log,
  });
  app.addHook('onReady', async () => worker.start());
  // Before the platform closes the store (its onClose hook was added first and runs last).
  app.addHook('preClose', async () => worker.stop());
}
