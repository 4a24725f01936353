// Messaging automation: sequences, their runner and timers, and inbound triggers.
import type { Area } from '#server/apis/area.js';
import { automationHandlers } from './handlers.js';
import { setup } from './setup.js';

export const automationArea: Area = { name: 'messaging/automation', handlers: { messaging: automationHandlers }, plugin: setup };
