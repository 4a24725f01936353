// Messaging campaigns: create, list, get, start, pause, resume, cancel.
import type { operations } from '../../../../generated/messaging/types.js';
import type { Handlers } from '../../../lib/handler-types.js';

export const campaignHandlers: Handlers<operations> = {};
