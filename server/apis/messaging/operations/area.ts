// Messaging operations: usage, agents, Google connection, kanban funnels.
import type { Area } from '#server/apis/area.js';
import { operationsHandlers } from './handlers.js';
import { setup } from './setup.js';

export const operationsArea: Area = { name: 'messaging/operations', handlers: { messaging: operationsHandlers }, plugin: setup };
