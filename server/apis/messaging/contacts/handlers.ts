// Messaging CRM: contacts, tags, segments, custom fields.
import type { operations } from '../../../../generated/messaging/types.js';
import type { Handlers } from '../../../lib/handler-types.js';

export const contactHandlers: Handlers<operations> = {};
