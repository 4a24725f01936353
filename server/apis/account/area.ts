// Account: workspaces, owner sessions and API keys.
import type { Area } from '../area.js';
import { accountHandlers } from './handlers.js';

export const accountArea: Area = { name: 'account', handlers: { account: accountHandlers } };
