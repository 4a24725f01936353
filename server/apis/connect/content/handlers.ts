// Connect content: documents, links, reader sessions, analytics.
import type { operations } from '#generated/connect/types.js';
import type { Handlers } from '#server/lib/handler-types.js';
import { getDocumentAnalytics, getLinkAnalytics, listReaderSessions } from './analytics.js';
import { exportDocumentSessions, exportLinkSessions } from './export.js';
import { getDocumentCompletion, getLinkCompletion } from './completion.js';
import { getDocumentDailyAnalytics, getLinkDailyAnalytics } from './daily.js';
import { deleteDocument, getDocument, listDocuments, listDocumentVersions, uploadDocument, uploadDocumentVersion } from './documents.js';
import { createLink, getLink, listLinks, revokeLink } from './links.js';

export const contentHandlers: Handlers<operations> = {
  uploadDocument,
  listDocuments,
  getDocument,
  deleteDocument,
  uploadDocumentVersion,
  listDocumentVersions,
  getDocumentAnalytics,
  createLink,
  listLinks,
  getLink,
  getLinkAnalytics,
  getLinkDailyAnalytics,
  getDocumentDailyAnalytics,
  getLinkCompletion,
  getDocumentCompletion,
  exportLinkSessions,
  exportDocumentSessions,
  revokeLink,
  listReaderSessions,
};
