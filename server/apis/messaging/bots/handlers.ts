// Bots handlers (chatbots, message bots, quick replies), keyed by operationId.
import type { operations } from '#generated/messaging/types.js';
import type { Handlers } from '#server/lib/handler-types.js';
import { createChatbot, getChatbot, listChatbots, trainChatbot } from './chatbots.js';
import { createMessageBot, listMessageBots } from './message-bots.js';
import { createQuickReply, listQuickReplies } from './quick-replies.js';

export const botHandlers: Handlers<operations> = {
  listChatbots,
  createChatbot,
  getChatbot,
  trainChatbot,
  listMessageBots,
  createMessageBot,
  listQuickReplies,
  createQuickReply,
};
