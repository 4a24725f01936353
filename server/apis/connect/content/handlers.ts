// Connect content: documents, links, reader sessions, analytics.
import type { operations } from '../../../../generated/connect/types.js';
import type { Handlers } from '../../../lib/handler-types.js';

export const contentHandlers: Handlers<operations> = {};
