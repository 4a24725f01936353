// Messaging templates: create, list, validate media URL, sync status.
import type { operations } from '../../../../generated/messaging/types.js';
import type { Handlers } from '../../../lib/handler-types.js';

export const templateHandlers: Handlers<operations> = {};
