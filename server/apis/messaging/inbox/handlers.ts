// Messaging sending and inbox: send, chats, messages, read, typing, assignment. `uploadMedia` is left out
// (501): the chat providers have no media-upload call yet (see docs/messaging-sending.md).
import type { operations } from '#generated/messaging/types.js';
import type { Handlers } from '#server/lib/handler-types.js';
import { assignChat, listChats, listMessages, markChatRead, showTypingIndicator } from './inbox.js';
import { sendMessage } from './send.js';

export const inboxHandlers: Handlers<operations> = { sendMessage, listChats, listMessages, markChatRead, showTypingIndicator, assignChat };
