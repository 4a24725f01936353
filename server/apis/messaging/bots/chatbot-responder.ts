// The chatbot as an inbound responder (order 40, after flows and message bots): the number's
// chatbot answers a text with its closest trained pair when the similarity reaches its
// threshold, otherwise applies its fallback (a reply, a hand-over to an agent, or silence).
import type { FastifyBaseLogger } from 'fastify';
import type { Platform } from '#server/platform.js';
import type { InboundMessage, InboundResponder } from '../automation/responders.js';
import { contactFacts, handOver, sendText } from './replies.js';
import { SimilarityIndex } from './text-match.js';

interface Answer {
  answer: string;
}

interface Cached {
  stamp: number;
  index: SimilarityIndex<Answer>;
}

async function indexOf(platform: Platform, cache: Map<string, Cached>, chatbotId: string, trainedAt: Date): Promise<SimilarityIndex<Answer>> {
  const hit = cache.get(chatbotId);
  if (hit && hit.stamp === trainedAt.getTime()) return hit.index;
  const pairs = await platform.store.db
    .selectFrom('chatbot_qa_pairs')
    .select(['question', 'alternatives', 'answer'])
    .where('chatbot_id', '=', chatbotId)
    .orderBy('position')
    .execute();
  const index = new SimilarityIndex(pairs.flatMap((p) => [p.question, ...p.alternatives].map((text) => ({ text, item: { answer: p.answer } }))));
  cache.set(chatbotId, { stamp: trainedAt.getTime(), index });
  return index;
}

/** The chatbot answering on a number: one bound to the number wins over an account-wide one, then the newest. */
async function chatbotFor(platform: Platform, message: InboundMessage) {
  if (!message.businessAccountId) return undefined;
  return platform.store.db
    .selectFrom('chatbots')
    .selectAll()
    .where('workspace_id', '=', message.workspaceId)
    .where('business_account_id', '=', message.businessAccountId)
    .where('status', '=', 'active')
    .where('trained_at', 'is not', null)
    .where((eb) => eb.or([eb('phone_number_id', 'is', null), eb('phone_number_id', '=', message.phoneNumberId)]))
    .orderBy((eb) => eb.case().when('phone_number_id', 'is', null).then(1).else(0).end())
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .executeTakeFirst();
}

export function chatbotResponder(log: FastifyBaseLogger): InboundResponder {
  // Indexes of this instance's responder, rebuilt when the chatbot is trained again (trained_at changes).
  const cache = new Map<string, Cached>();
  return {
    name: 'chatbot',
    order: 40,
    async respond(platform: Platform, message: InboundMessage): Promise<boolean> {
      if (message.type !== 'text' || !message.text?.trim()) return false;
      const bot = await chatbotFor(platform, message);
      if (!bot?.trained_at) return false;
      const contact = await contactFacts(platform, message.workspaceId, message.contactId);
      if (!contact) return false;
      const best = (await indexOf(platform, cache, bot.id, bot.trained_at)).best(message.text);
      try {
        if (best && best.score >= bot.match_threshold) {
          await sendText(platform, message.workspaceId, message.phoneNumberId, contact, best.item.answer);
          return true;
        }
        const fallback = bot.fallback;
        if (fallback.action === 'reply' && fallback.text) {
          await sendText(platform, message.workspaceId, message.phoneNumberId, contact, fallback.text);
          return true;
        }
        if (fallback.action === 'assign_agent') {
          const agent = await handOver(platform, message.workspaceId, message.phoneNumberId, contact.id, fallback.agent_id, bot.last_assigned_owner_id);
          if (agent && !fallback.agent_id)
            await platform.store.db.updateTable('chatbots').set({ last_assigned_owner_id: agent }).where('id', '=', bot.id).execute();
          return agent !== null;
        }
        return false;
      } catch (error) {
        // The reply was refused (e.g. the number was disconnected meanwhile): the message stays in the inbox.
        log.warn({ err: error, chatbotId: bot.id, messageId: message.messageId }, 'chatbot: reply not sent');
        return true;
      }
    },
  };
}
