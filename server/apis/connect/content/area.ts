// Connect content: documents, share links, the public viewer and its analytics.
import type { Area } from '#server/apis/area.js';
import { contentHandlers } from './handlers.js';
import { documentBeforeBody } from './documents.js';
import { setup } from './setup.js';
import { captureUploadParts } from './upload-parts.js';

export const connectContentArea: Area = {
  name: 'connect/content',
  handlers: { connect: contentHandlers },
  routes: {
    uploadDocument: { preParsing: captureUploadParts },
    uploadDocumentVersion: { preParsing: [documentBeforeBody, captureUploadParts] },
  },
  plugin: setup,
};
