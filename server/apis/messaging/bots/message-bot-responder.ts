// Message bots as inbound responders. Keyword bots (order 30) answer a text matching one of
// their keywords; schedule bots (order 35) answer any inbound message while their schedule
// applies, once per contact and schedule period (one away message per closed night), and let
// the message go on to the chatbot: an away notice does not answer the question.
// `cooldown_minutes` holds for both. The last reply per (bot, contact) is claimed under a row
// lock, so two instances handling two messages of one contact cannot both answer.
import type { FastifyBaseLogger } from 'fastify';
import type { Selectable } from 'kysely';
import type { Platform } from '#server/platform.js';
import type { MessageBotsTable } from '#server/store/schema/bots.js';
import type { InboundMessage, InboundResponder } from '../automation/responders.js';
import { contactFacts, sendBotReply } from './replies.js';
import { samePeriod, scheduleApplies } from './schedule.js';
import { keywordMatches } from './text-match.js';

type Bot = Selectable<MessageBotsTable>;

/** The active bots of a kind that answer on a number: number-bound ones first, then the newest. */
async function botsFor(platform: Platform, message: InboundMessage, kind: Bot['kind']): Promise<Bot[]> {
  if (!message.businessAccountId) return [];
  return platform.store.db
    .selectFrom('message_bots')
    .selectAll()
    .where('workspace_id', '=', message.workspaceId)
    .where('business_account_id', '=', message.businessAccountId)
    .where('kind', '=', kind)
    .where('status', '=', 'active')
    .where((eb) => eb.or([eb('phone_number_id', 'is', null), eb('phone_number_id', '=', message.phoneNumberId)]))
    .orderBy((eb) => eb.case().when('phone_number_id', 'is', null).then(1).else(0).end())
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
}

/** Records a reply of `bot` to `contactId` at `now` unless the cooldown or the schedule period says it already answered. */
export async function claimReply(platform: Platform, bot: Bot, contactId: string, now: Date): Promise<boolean> {
  return platform.store.db.transaction().execute(async (trx) => {
    const last = await trx
      .selectFrom('message_bot_replies')
      .select('last_replied_at')
      .where('message_bot_id', '=', bot.id)
      .where('contact_id', '=', contactId)
      .forUpdate()
      .executeTakeFirst();
    if (!last) {
      const inserted = await trx
        .insertInto('message_bot_replies')
        .values({ message_bot_id: bot.id, contact_id: contactId, last_replied_at: now })
        .onConflict((oc) => oc.columns(['message_bot_id', 'contact_id']).doNothing())
        .returning('contact_id')
        .executeTakeFirst();
      return inserted !== undefined; // undefined: another instance answered this instant
    }
    const at = new Date(last.last_replied_at);
    if (bot.cooldown_minutes > 0 && now.getTime() - at.getTime() < bot.cooldown_minutes * 60_000) return false;
    if (bot.schedule && samePeriod(bot.schedule, at, now)) return false;
    await trx
      .updateTable('message_bot_replies')
      .set({ last_replied_at: now })
      .where('message_bot_id', '=', bot.id)
      .where('contact_id', '=', contactId)
      .execute();
    return true;
  });
}

async function answer(platform: Platform, log: FastifyBaseLogger, bot: Bot, message: InboundMessage): Promise<void> {
  const contact = await contactFacts(platform, message.workspaceId, message.contactId);
  if (!contact || !(await claimReply(platform, bot, contact.id, platform.now()))) return;
  try {
    await sendBotReply(platform, message.workspaceId, message.phoneNumberId, contact, bot.reply);
  } catch (error) {
    log.warn({ err: error, messageBotId: bot.id, messageId: message.messageId }, 'message bot: reply not sent');
  }
}

export function keywordResponder(log: FastifyBaseLogger): InboundResponder {
  return {
    name: 'message-bots.keyword',
    order: 30,
    async respond(platform, message) {
      if (message.type !== 'text' || !message.text) return false;
      const text = message.text;
      const bot = (await botsFor(platform, message, 'keyword')).find((b) => b.keywords.some((k) => keywordMatches(text, k, b.match ?? 'exact')));
      if (!bot) return false;
      // A matched keyword is handled even when its cooldown keeps the bot silent.
      await answer(platform, log, bot, message);
      return true;
    },
  };
}

export function scheduleResponder(log: FastifyBaseLogger): InboundResponder {
  return {
    name: 'message-bots.schedule',
    order: 35,
    async respond(platform, message) {
      const now = platform.now();
      const bot = (await botsFor(platform, message, 'schedule')).find((b) => b.schedule && scheduleApplies(b.schedule, now));
      if (bot) await answer(platform, log, bot, message);
      return false;
    },
  };
}
