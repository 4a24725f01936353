// Messaging contacts: contacts, tags, custom fields, segments, erasure, CSV import and export,
// opt-out keywords (an inbound step, in the transaction that stores each inbound message).
import type { Area } from '#server/apis/area.js';
import { registerInboundStep } from '#server/events/inbound-steps.js';
import { captureMediaParts } from '../media/parts.js';
import { contactHandlers } from './handlers.js';
import { setupContactImports } from './imports.js';
import { applyOptOutKeywords } from './opt-out.js';

export const contactsArea: Area = {
  name: 'messaging/contacts',
  handlers: { messaging: contactHandlers },
  // The file part's name and parser failures as problems, as on the media routes.
  routes: { createContactImport: { preParsing: captureMediaParts } },
  plugin: async (app) => {
    await setupContactImports(app);
    const unsubscribe = registerInboundStep(app.platform, 'opt-out', applyOptOutKeywords);
    app.addHook('onClose', async () => unsubscribe());
  },
};
