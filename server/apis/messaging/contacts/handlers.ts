// Messaging CRM: contacts, tags, segments, custom fields, erasure, import, export, opt-out keywords.
import type { operations } from '#generated/messaging/types.js';
import type { Handlers } from '#server/lib/handler-types.js';
import { createContact, getContact, updateContact } from './contacts.js';
import { createCustomField, listCustomFields } from './custom-fields.js';
import { deleteCustomField, deleteSegment, deleteTag } from './deletions.js';
import { deleteContact, listContactErasures } from './erase.js';
import { exportContacts } from './export.js';
import { createContactImport, getContactImport } from './imports.js';
import { listContacts } from './list.js';
import { getOptOutSettings, updateOptOutSettings } from './opt-out.js';
import { createSegment, listSegments } from './segments.js';
import { createTag, listTags } from './tags.js';

export const contactHandlers: Handlers<operations> = {
  listContacts,
  createContact,
  getContact,
  updateContact,
  deleteContact,
  listContactErasures,
  createContactImport,
  getContactImport,
  exportContacts,
  listTags,
  createTag,
  deleteTag,
  listSegments,
  createSegment,
  deleteSegment,
  listCustomFields,
  createCustomField,
  deleteCustomField,
  getOptOutSettings,
  updateOptOutSettings,
};
