// Shared steps of the forms tests: form bodies, the API calls, and the customer's submission
// (an interactive `nfm_reply`, the way the provider's webhook delivers a completed Flow).
import type { FastifyInstance } from 'fastify';
import type { Tenant } from '../inbox/support.js';
import { customerSends } from '../bots/support.js';

export { tenant, cloudTenant, PROBLEMS, type Tenant } from '../inbox/support.js';
export { dispatched } from '../bots/support.js';

export const FIELDS = [
  { name: 'full_name', label: 'Full name', type: 'text', required: true, custom_field: 'name' },
  { name: 'email', label: 'E-mail', type: 'email' },
  { name: 'preferred_day', label: 'Preferred day', type: 'date', required: true },
  {
    name: 'visit_reason',
    label: 'Reason',
    type: 'dropdown',
    options: [
      { id: 'checkup', title: 'Check-up' },
      { id: 'pain', title: 'Pain or emergency' },
    ],
  },
  { name: 'people', label: 'People', type: 'number', custom_field: 'party_size' },
  { name: 'newsletter', label: 'Send me news', type: 'opt_in' },
];

export const formBody = (t: Tenant, extra: Record<string, unknown> = {}) => ({
  name: 'Appointment request',
  waba_id: t.wabaId,
  category: 'APPOINTMENT_BOOKING',
  title: 'Book a visit',
  submit_label: 'Send request',
  fields: FIELDS,
  ...extra,
});

export const createForm = (app: FastifyInstance, t: Tenant, body: Record<string, unknown>) =>
  app.inject({ method: 'POST', url: '/api/forms', headers: t.headers, payload: body });
export const publishForm = (app: FastifyInstance, t: Tenant, id: string) =>
  app.inject({ method: 'PATCH', url: `/api/forms/${id}/publish`, headers: t.headers });
export const listForms = (app: FastifyInstance, t: Tenant, query: string) => app.inject({ method: 'GET', url: `/api/forms?${query}`, headers: t.headers });

export async function formCount(app: FastifyInstance, t: Tenant): Promise<number> {
  const row = await app.platform.store.db
    .selectFrom('forms')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('workspace_id', '=', t.workspaceId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** The customer completes a Flow: `response` is the completion payload (plus `flow_token`). Answers the stored message id. */
export function customerSubmits(app: FastifyInstance, t: Tenant, from: string, response: Record<string, unknown>): Promise<string> {
  return customerSends(app, t, from, {
    type: 'interactive',
    interactive: { type: 'nfm_reply', nfm_reply: { name: 'flow', body: 'Sent', response_json: JSON.stringify(response) } },
  } as never);
}

export async function addCustomField(app: FastifyInstance, t: Tenant, key: string, type: 'text' | 'number' | 'date' | 'choice', choices?: string[]) {
  const res = await app.inject({
    method: 'POST',
    url: '/api/custom-fields',
    headers: t.headers,
    payload: { key, label: key, type, ...(choices ? { choices } : {}) },
  });
  if (res.statusCode !== 201) throw new Error(`custom field ${key}: ${res.statusCode} ${res.body}`);
}

/** A tenant whose custom fields FIELDS stores into: party_size (number) and preferred_day (date). */
export async function withFields<T extends Tenant>(app: FastifyInstance, t: T): Promise<T> {
  await addCustomField(app, t, 'party_size', 'number');
  await addCustomField(app, t, 'preferred_day', 'date');
  return t;
}
