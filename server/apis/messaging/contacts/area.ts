// Messaging contacts: contacts, tags, custom fields, segments.
import type { Area } from '#server/apis/area.js';
import { contactHandlers } from './handlers.js';

export const contactsArea: Area = { name: 'messaging/contacts', handlers: { messaging: contactHandlers } };
