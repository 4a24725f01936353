// Submissions: a completed Flow arrives as an inbound `nfm_reply` through the sandbox's signed
// webhook path; the app's dispatcher stores it once on the form and on the contact. Automations
// reference the form by `flow.flow_id` (never the form id) and resume on the submission.
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { storeSubmission } from '#server/apis/messaging/forms/submissions.js';
import { until } from '../campaigns/support.js';
import { createForm, customerSubmits, dispatched, formBody, listForms, PROBLEMS, publishForm, tenant, withFields, type Tenant } from './support.js';
import { customerAsks } from '../bots/support.js';

let app: FastifyInstance;
beforeAll(async () => {
  app = await buildShared();
}, 240_000);

async function publishedForm(t: Tenant, extra: Record<string, unknown> = {}) {
  const created = await createForm(app, t, formBody(t, extra));
  expect(created.statusCode, created.body).toBe(201);
  const res = await publishForm(app, t, created.json().id);
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { id: string; flow: { flow_id: string } };
}

const ANSWERS = { full_name: 'Lena Meyer', email: 'lena@example.com', preferred_day: '2026-12-01', visit_reason: 'checkup', people: '3', newsletter: true };

const submissions = (formId: string) => app.platform.store.db.selectFrom('form_submissions').selectAll().where('form_id', '=', formId).execute();
const contactOf = async (t: Tenant, phone: string) => {
  const row = await app.platform.store.db
    .selectFrom('contacts')
    .select('id')
    .where('workspace_id', '=', t.workspaceId)
    .where('phone', '=', phone)
    .executeTakeFirstOrThrow();
  const res = await app.inject({ method: 'GET', url: `/api/contacts/${row.id}`, headers: t.headers });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
};
const countOf = async (t: Tenant, formId: string) =>
  (await listForms(app, t, `waba_id=${t.wabaId}&limit=100`)).json().data.find((f: { id: string }) => f.id === formId).submission_count;

describe('a submission (inbound nfm_reply)', () => {
  it('is stored on the form and on the contact: name and email attributes, custom fields by type', async () => {
    const t = await withFields(app, await tenant(app));
    const form = await publishedForm(t);
    const phone = '+4915112370001';
    const id = await customerSubmits(app, t, phone, { flow_token: 'unused', form_id: form.id, ...ANSWERS });
    const outcome = await dispatched(app, id);
    // Opt-out keywords are looked at before anything else (messaging-automation.md); a submission
    // is none, so the form's store is the first to act.
    expect(outcome.ran.slice(0, 2)).toEqual(['contacts.opt_out_keyword', 'forms.submission']);
    // Storing is not answering: nothing else handled it either (no bot, no flow).
    expect(outcome.handledBy).toBeNull();
    const [stored, ...more] = await submissions(form.id);
    expect(more).toEqual([]);
    expect(stored).toMatchObject({ workspace_id: t.workspaceId, message_id: id });
    expect(stored!.answers).toEqual({
      full_name: 'Lena Meyer',
      email: 'lena@example.com',
      preferred_day: '2026-12-01',
      visit_reason: 'checkup',
      people: 3,
      newsletter: true,
    });
    expect(await countOf(t, form.id)).toBe(1);
    const contact = await contactOf(t, phone);
    expect(contact).toMatchObject({ name: 'Lena Meyer', email: 'lena@example.com' });
    // people goes to party_size (custom_field), preferred_day to the field of its name; no field for the rest.
    expect(contact.custom_fields).toEqual({ party_size: 3, preferred_day: '2026-12-01' });
  });

  it('stored once: running it again for the same message stores nothing twice', async () => {
    const t = await withFields(app, await tenant(app));
    const form = await publishedForm(t);
    const phone = '+4915112370002';
    const id = await customerSubmits(app, t, phone, { form_id: form.id, ...ANSWERS });
    await dispatched(app, id);
    const contact = await contactOf(t, phone);
    expect(await storeSubmission(app.platform, { workspaceId: t.workspaceId, messageId: id, contactId: contact.id })).toBeUndefined();
    expect(await submissions(form.id)).toHaveLength(1);
    expect(await countOf(t, form.id)).toBe(1);
  });

  it('an answer that does not fit its custom field stays in the submission only', async () => {
    const t = await withFields(app, await tenant(app));
    const form = await publishedForm(t);
    const phone = '+4915112370003';
    await dispatched(app, await customerSubmits(app, t, phone, { form_id: form.id, ...ANSWERS, preferred_day: 'next Tuesday' }));
    expect((await submissions(form.id))[0]!.answers).toMatchObject({ preferred_day: 'next Tuesday' });
    expect((await contactOf(t, phone)).custom_fields).toEqual({ party_size: 3 });
  });

  it("found by a flow_token naming the form's flow_id when the payload has no form_id", async () => {
    const t = await withFields(app, await tenant(app));
    const form = await publishedForm(t);
    const phone = '+4915112370004';
    await dispatched(app, await customerSubmits(app, t, phone, { flow_token: form.flow.flow_id, full_name: 'Ana Lima' }));
    expect((await submissions(form.id))[0]!.answers).toEqual({ full_name: 'Ana Lima' });
    expect((await contactOf(t, phone)).name).toBe('Ana Lima');
  });

  it("B2 a response naming another workspace's form is not stored on it", async () => {
    const [t, other] = [await withFields(app, await tenant(app)), await withFields(app, await tenant(app))];
    const theirs = await publishedForm(other);
    const phone = '+4915112370005';
    await dispatched(app, await customerSubmits(app, t, phone, { form_id: theirs.id, flow_token: theirs.flow.flow_id, ...ANSWERS }));
    expect(await submissions(theirs.id)).toEqual([]);
    expect(await countOf(other, theirs.id)).toBe(0);
    expect((await contactOf(t, phone)).custom_fields).toEqual({});
  });

  it('a response naming no form: nothing stored, the message stays in the inbox', async () => {
    const t = await withFields(app, await tenant(app));
    const form = await publishedForm(t);
    const phone = '+4915112370006';
    const id = await customerSubmits(app, t, phone, { flow_token: 'something-else', full_name: 'Nobody' });
    expect((await dispatched(app, id)).handledBy).toBeNull();
    expect(await submissions(form.id)).toEqual([]);
    const message = await app.platform.store.db.selectFrom('messages').select(['type', 'direction']).where('id', '=', id).executeTakeFirstOrThrow();
    expect(message).toEqual({ type: 'form_response', direction: 'inbound' });
  });
});

describe('automations reference flow.flow_id, not the form id', () => {
  const flowBody = (t: Tenant, flowId: string, status = 'active') => ({
    name: 'Intake',
    waba_id: t.wabaId,
    status,
    triggers: [{ id: 'start', type: 'keyword', parameters: { keywords: ['book'] } }],
    nodes: [
      { id: 'form', type: 'start_form', parameters: { flow_id: flowId, body: 'Please fill in the form', cta: 'Open form' } },
      { id: 'thanks', type: 'send_text', parameters: { text: 'Thanks, see you soon.' } },
    ],
    connections: [
      { from_node: 'start', to_node: 'form' },
      { from_node: 'form', from_port: 'submitted', to_node: 'thanks' },
    ],
  });
  const createAutomation = (t: Tenant, body: Record<string, unknown>) =>
    app.inject({ method: 'POST', url: '/api/automation', headers: t.headers, payload: body });

  it('the form id in start_form: refused, the error saying to use flow.flow_id', async () => {
    const t = await withFields(app, await tenant(app));
    const form = await publishedForm(t);
    const res = await createAutomation(t, flowBody(t, form.id));
    expect([400, 422]).toContain(res.statusCode);
    expect(res.json().errors).toContainEqual({
      pointer: '/body/nodes/0/parameters/flow_id',
      detail: `node 'form': ${form.id} is a form id; use the form's flow.flow_id (digits) instead`,
    });
  });

  it("an active flow with a draft form's flow_id: refused until the form is published", async () => {
    const t = await withFields(app, await tenant(app));
    const draft = (await createForm(app, t, formBody(t))).json();
    const res = await createAutomation(t, flowBody(t, draft.flow.flow_id));
    expect(res.statusCode).toBe(422);
    expect(res.json().type).toBe(`${PROBLEMS}unprocessable`);
    expect(JSON.stringify(res.json().errors)).toContain(`the form ${draft.id} is not published`);
    expect((await publishForm(app, t, draft.id)).statusCode).toBe(200);
    expect((await createAutomation(t, flowBody(t, draft.flow.flow_id))).statusCode).toBe(201);
  });

  it('end to end: the run sends the Flow by flow_id; the submission is stored on the contact and resumes the run', async () => {
    const t = await withFields(app, await tenant(app));
    const form = await publishedForm(t);
    const created = await createAutomation(t, flowBody(t, form.flow.flow_id));
    expect(created.statusCode, created.body).toBe(201);
    const phone = '+4915112370010';
    expect((await customerAsks(app, t, phone, 'book')).handledBy).not.toBeNull();
    const sent = await app.platform.store.db
      .selectFrom('messages')
      .innerJoin('contacts', 'contacts.id', 'messages.contact_id')
      .select(['messages.content'])
      .where('contacts.phone', '=', phone)
      .where('messages.direction', '=', 'outbound')
      .execute();
    const flowMessage = sent[0]!.content as { interactive: { action: { parameters: { flow_id: string; flow_token: string } } } };
    expect(flowMessage.interactive.action.parameters.flow_id).toBe(form.flow.flow_id);
    // The customer's phone answers with the run's flow token and our completion payload.
    const id = await customerSubmits(app, t, phone, { flow_token: flowMessage.interactive.action.parameters.flow_token, form_id: form.id, ...ANSWERS });
    const outcome = await dispatched(app, id);
    // Opt-out keywords are looked at before anything else (messaging-automation.md); a submission
    // is none, so the form's store is the first to act.
    expect(outcome.ran.slice(0, 2)).toEqual(['contacts.opt_out_keyword', 'forms.submission']);
    expect(outcome.handledBy).not.toBeNull();
    expect((await contactOf(t, phone)).custom_fields).toEqual({ party_size: 3, preferred_day: '2026-12-01' });
    await until(
      async () => {
        const texts = await app.platform.store.db
          .selectFrom('messages')
          .innerJoin('contacts', 'contacts.id', 'messages.contact_id')
          .select('messages.content')
          .where('contacts.phone', '=', phone)
          .where('messages.direction', '=', 'outbound')
          .execute();
        return texts.some((m) => (m.content as { text?: string }).text === 'Thanks, see you soon.');
      },
      15_000,
      'the thank-you message',
    );
    expect(await submissions(form.id)).toHaveLength(1);
  });
});
