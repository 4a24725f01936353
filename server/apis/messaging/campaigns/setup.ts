// Campaign workers: durable, rate-limited sending in every server instance, stopped on close;
// and delivery progress: the inbound webhook's `message.status` events move recipients forward.
import type { FastifyInstance } from 'fastify';
import type { Platform } from '../../../platform.js';
import type { RecipientState } from '../../../store/schema/campaigns.js';
import { CampaignWorker } from './worker.js';

/** The recipient states a provider status may follow (forward only; `read` is final). */
const FROM: Record<string, RecipientState[]> = {
  delivered: ['sent'],
  read: ['sent', 'delivered'],
  failed: ['sent', 'delivered'],
};

export async function applyMessageStatus(platform: Platform, data: { messageId?: unknown; status?: unknown; errorCode?: unknown }): Promise<void> {
  const { messageId, status } = data;
  if (typeof messageId !== 'string' || typeof status !== 'string' || !FROM[status]) return;
  const error = status === 'failed' ? JSON.stringify({ code: typeof data.errorCode === 'number' ? data.errorCode : 'failed', title: 'The provider reported the message failed.' }) : undefined;
  await platform.store.db
    .updateTable('campaign_recipients')
    .set({ state: status as RecipientState, updated_at: platform.now(), ...(error ? { error } : {}) })
    .where('message_id', '=', messageId)
    .where('state', 'in', FROM[status])
    .execute();
}

function envMs(name: string): number | undefined {
  const n = Number(process.env[name]);
  return Number.isFinite(n) && n > 0 ? n : undefined;
}

export async function setup(app: FastifyInstance): Promise<void> {
  const platform = app.platform;
  const worker = new CampaignWorker({
    platform,
    leaseMs: envMs('CAMPAIGN_LEASE_MS'),
    pollMs: envMs('CAMPAIGN_POLL_MS'),
    log: (message, extra) => app.log.warn(extra ?? {}, message),
  });
  const off = platform.bus.subscribe('message.status', (e) => applyMessageStatus(platform, e.data));
  app.addHook('onReady', async () => worker.start());
  // Before the platform closes the store (its onClose hook was added first and runs last).
  app.addHook('preClose', async () => {
    off();
    await worker.stop();
  });
}
