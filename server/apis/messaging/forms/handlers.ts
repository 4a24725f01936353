// Forms handlers, keyed by operationId.
import type { operations } from '#generated/messaging/types.js';
import type { Handlers } from '#server/lib/handler-types.js';
import { createForm, listForms, publishForm } from './forms.js';

export const formHandlers: Handlers<operations> = { listForms, createForm, publishForm };
