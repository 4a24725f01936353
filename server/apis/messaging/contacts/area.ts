// Messaging contacts: contacts, tags, custom fields, segments, erasure, CSV import and export,
// opt-out keywords (an inbound step, in the transaction that stores each inbound message).
import type { Area } from '#server/apis/area.js';
import { registerInboundStep } from '#server/events/inbound-steps.js';
import { captureParts } from '../media/parts.js';
import { contactHandlers } from './handlers.js';
import { MAX_IMPORT_BYTES, setupContactImports } from './imports.js';
import { applyOptOutKeywords } from './opt-out.js';

export const contactsArea: Area = {
  name: 'messaging/contacts',
  handlers: { messaging: contactHandlers },
  // The file part's name and parser failures as problems, as on the media routes; the CSV's own
  // cap enforced from Content-Length and while the file streams, never after buffering it.
  routes: { createContactImport: { preParsing: captureParts(MAX_IMPORT_BYTES, 'the largest CSV an import takes; split it') } },
  plugin: async (app) => {
    await setupContactImports(app);
    const unsubscribe = registerInboundStep(app.platform, 'opt-out', applyOptOutKeywords);
    app.addHook('onClose', async () => unsubscribe());
  },
};
