// Messaging templates: creation, status sync, media checks.
import type { Area } from '#server/apis/area.js';
import { templateHandlers } from './handlers.js';

export const templatesArea: Area = { name: 'messaging/templates', handlers: { messaging: templateHandlers } };
