// Operations: usage against the plan, agents, connecting Google, kanban funnels.
import type { operations } from '#generated/messaging/types.js';
import type { Handlers } from '#server/lib/handler-types.js';
import { listAgents } from './agents.js';
import { getGoogleConnectUrl } from './google.js';
import { listKanbanFunnels } from './kanban.js';
import { getUsage } from './usage.js';

export const operationsHandlers: Handlers<operations> = { getUsage, listAgents, getGoogleConnectUrl, listKanbanFunnels };
