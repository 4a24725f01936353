// Messaging bots: chatbots, message bots and quick replies, and their inbound responders.
import type { Area } from '#server/apis/area.js';
import { botHandlers } from './handlers.js';
import { setup } from './setup.js';

export const botsArea: Area = { name: 'messaging/bots', handlers: { messaging: botHandlers }, plugin: setup };
