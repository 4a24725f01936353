// Messaging configuration: provider connections, business accounts, numbers, profiles.
import type { Area } from '#server/apis/area.js';
import { configurationHandlers } from './handlers.js';

export const configurationArea: Area = { name: 'messaging/configuration', handlers: { messaging: configurationHandlers } };
