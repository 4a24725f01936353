// Messaging sending and inbox: send, media, chats, messages, assignment.
import type { operations } from '../../../../generated/messaging/types.js';
import type { Handlers } from '../../../lib/handler-types.js';

export const inboxHandlers: Handlers<operations> = {};
