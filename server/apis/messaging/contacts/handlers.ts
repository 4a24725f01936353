// Messaging CRM: contacts, tags, segments, custom fields.
import type { operations } from '#generated/messaging/types.js';
import type { Handlers } from '#server/lib/handler-types.js';
import { createContact, getContact, updateContact } from './contacts.js';
import { createCustomField, listCustomFields } from './custom-fields.js';
import { listContacts } from './list.js';
import { createSegment, listSegments } from './segments.js';
import { createTag, listTags } from './tags.js';

export const contactHandlers: Handlers<operations> = {
  listContacts,
  createContact,
  getContact,
  updateContact,
  listTags,
  createTag,
  listSegments,
  createSegment,
  listCustomFields,
  createCustomField,
};
