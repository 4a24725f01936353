// Messaging campaigns: their API and the durable, rate-limited sending worker.
import type { Area } from '#server/apis/area.js';
import { campaignHandlers } from './handlers.js';
import { setup } from './setup.js';

export const campaignsArea: Area = { name: 'messaging/campaigns', handlers: { messaging: campaignHandlers }, plugin: setup };
