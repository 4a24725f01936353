// Connect OAuth: clients, authorize, token, revocation, grants, metadata.
import type { operations } from '../../../../generated/connect/types.js';
import type { Handlers } from '../../../lib/handler-types.js';

export const oauthHandlers: Handlers<operations> = {};
