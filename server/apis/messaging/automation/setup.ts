// Automation at start-up: the inbound dispatcher (each inbound message is recorded as due with it,
// an inbound step; claimed once across instances, it runs the responders), the opt-out keywords'
// responder (0), the automation's own responders (10: waiting runs,
// 20: flow triggers, 25: sequence keywords), and the timer worker (waits, delays, crashed runs,
// sequence steps and enrolments). All stop before the store closes.
import type { FastifyInstance } from 'fastify';
import { registerInboundStep } from '#server/events/inbound-steps.js';
import { optOutResponder } from '../contacts/opt-out.js';
import { sendOptOutConfirmation } from '../outbound/deliver.js';
import { recordDue, startDispatcher } from './dispatcher.js';
import { registerAutomationResponders } from './inbound.js';
import { InboundResponders, registerInboundResponder } from './responders.js';
import type { RunnerHooks } from './runner.js';
import { enrolNewContacts, registerSequenceResponder, sendDueSteps, stopOnReply } from './sequences.js';
import { TimerWorker } from './timers.js';
import { earliest } from '#server/lib/wake-up.js';

const CLAIM_TTL_MS = 7 * 86_400_000;
const ENROL_EVERY_MS = 1_000;

export async function setup(app: FastifyInstance): Promise<void> {
  const platform = app.platform;
  // Before the other areas' setups: bots and forms register their responders here too.
  app.decorate('inboundResponders', new InboundResponders());
  const log = (message: string, extra?: object) => app.log.warn(extra ?? {}, message);
  let running = false;
  let lastSweep = 0;
  const worker = new TimerWorker({
    platform,
    pollMs: app.config.workers.automationPollMs ?? app.config.workers.idleMs,
    log,
    extra: async () => {
      // Claims only need to outlive provider redeliveries of a message (hours): kept a week.
      if (Date.now() - lastSweep > 60_000) {
        lastSweep = Date.now();
        await platform.store.db
          .deleteFrom('automation_inbound_claims')
          .where('received_at', '<', new Date(platform.now().getTime() - CLAIM_TTL_MS))
          .execute();
      }
      const watching = await enrolNewContacts(platform);
      const next = await sendDueSteps(platform, () => running);
      // Contacts and tags announce nothing: while a sequence enrols on them, look every second.
      return watching ? earliest(next, new Date(platform.now().getTime() + ENROL_EVERY_MS)) : next;
    },
  });
  const runner: RunnerHooks = { waited: (at) => worker.waited(at), log };
  const offResponders = [
    // Order 0: opt-out and opt-in keywords are answered before any flow, bot or sequence.
    registerInboundResponder(app, optOutResponder(sendOptOutConfirmation, log)),
    registerAutomationResponders(app, runner),
    registerSequenceResponder(app),
    registerInboundStep(platform, 'automation', recordDue),
  ];
  let stopDispatcher: (() => Promise<void>) | undefined;
  app.addHook('onReady', async () => {
    running = true;
    stopDispatcher = startDispatcher(app, {
      log,
      beforeResponders: (m) => stopOnReply(platform, m),
      sweepMs: app.config.workers.inboundSweepMs ?? app.config.workers.idleMs,
    });
    await worker.start();
  });
  // Before the platform closes the store (its onClose hook was added first and runs last).
  app.addHook('preClose', async () => {
    running = false;
    await stopDispatcher?.();
    await worker.stop();
    offResponders.forEach((off) => off());
  });
}
