// Drip sequences on the automation's durable timers: enrolment (tag_added, keyword), steps sent
// once when due, stop on reply, and listSequences with its counters.
import { expect, it } from 'vitest';
import { build } from '#test/helper.js';
import { stopOnReply } from '#server/apis/messaging/automation/sequences.js';
import { newId } from '#server/lib/ids.js';
import { addTag, api, inboundText, outbound, templateId, until, workspace } from './support.js';
import { elapse } from '#test/support/eventually.js';

const env = { AUTOMATION_POLL_MS: '200' };

it('A-13 a tagged contact is enrolled, each due step is sent once, the sequence lists its counts', async () => {
  const app = await build({ env });
  const w = await workspace(app);
  const db = app.platform.store.db;
  const tag = await addTag(app, w.workspaceId, 'new-patient');
  const tpl = await templateId(app, w.workspaceId, 'welcome_offer');
  const now = new Date();
  const seqId = newId('seq');
  await db
    .insertInto('automation_sequences')
    .values({
      id: seqId,
      workspace_id: w.workspaceId,
      business_account_id: w.accountId,
      phone_number_id: w.numberId,
      name: 'Onboarding',
      status: 'active',
      trigger: JSON.stringify({ type: 'tag_added', tag_id: tag, keyword: null }),
      steps: JSON.stringify([
        { position: 1, delay: 1, delay_unit: 'minutes', message_type: 'template', text: null, template_id: tpl, language: 'en_US' },
        { position: 2, delay: 1, delay_unit: 'days', message_type: 'template', text: null, template_id: tpl, language: 'en_US' },
      ]),
      stop_on_reply: true,
      created_at: now,
      updated_at: now,
    })
    .execute();
  const contactId = newId('ct');
  const phone = '+4915112340010';
  await db.insertInto('contacts').values({ id: contactId, workspace_id: w.workspaceId, phone, name: 'Eva' }).execute();
  await db.insertInto('contact_tags').values({ contact_id: contactId, tag_id: tag }).execute();

  const enrolment = await until(
    async () => db.selectFrom('automation_sequence_enrolments').selectAll().where('contact_id', '=', contactId).executeTakeFirst(),
    10_000,
    'the enrolment',
  );
  expect(enrolment).toMatchObject({ status: 'active', next_step: 1 });
  expect(new Date(enrolment.fire_at!).getTime() - now.getTime()).toBeGreaterThanOrEqual(59_000);
  // A minute passes.
  await db
    .updateTable('automation_sequence_enrolments')
    .set({ fire_at: new Date(Date.now() - 1000) })
    .where('id', '=', enrolment.id)
    .execute();
  await until(async () => (await outbound(app, phone)).length === 1, 10_000, 'step 1');
  const after = await db.selectFrom('automation_sequence_enrolments').selectAll().where('id', '=', enrolment.id).executeTakeFirstOrThrow();
  expect(after).toMatchObject({ status: 'active', next_step: 2, leased_by: null });
  await elapse(600, 'absence: a second send of the step would come on a later poll (200 ms)');
  expect(await outbound(app, phone)).toHaveLength(1); // sent once, the next step is a day away

  const listed = (await api(app, w.key)('GET', `/api/sequences?waba_id=${w.accountId}`)).json();
  expect(listed.data).toEqual([
    expect.objectContaining({
      id: seqId,
      status: 'active',
      enrolled_count: 1,
      completed_count: 0,
      stop_on_reply: true,
      trigger: { type: 'tag_added', tag_id: tag, keyword: null },
    }),
  ]);

  await db
    .updateTable('automation_sequence_enrolments')
    .set({ fire_at: new Date(Date.now() - 1000) })
    .where('id', '=', enrolment.id)
    .execute();
  await until(
    async () =>
      (await db.selectFrom('automation_sequence_enrolments').select('status').where('id', '=', enrolment.id).executeTakeFirstOrThrow()).status === 'completed',
    10_000,
    'completion',
  );
  expect(await outbound(app, phone)).toHaveLength(2);
  expect((await api(app, w.key)('GET', `/api/sequences?waba_id=${w.accountId}`)).json().data[0]).toMatchObject({ enrolled_count: 0, completed_count: 1 });
}, 60_000);

it('A-14 a keyword enrols the contact; a reply stops the enrolment (stop_on_reply)', async () => {
  const app = await build({ env });
  const w = await workspace(app);
  const db = app.platform.store.db;
  const now = new Date();
  const seqId = newId('seq');
  await db
    .insertInto('automation_sequences')
    .values({
      id: seqId,
      workspace_id: w.workspaceId,
      business_account_id: w.accountId,
      phone_number_id: null,
      name: 'Tips',
      status: 'active',
      trigger: JSON.stringify({ type: 'keyword', tag_id: null, keyword: 'TIPS' }),
      steps: JSON.stringify([{ position: 1, delay: 10, delay_unit: 'minutes', message_type: 'text', text: 'Tip 1', template_id: null, language: null }]),
      stop_on_reply: true,
      created_at: now,
      updated_at: now,
    })
    .execute();
  const phone = '+4915112340011';
  const first = await inboundText(app, w, phone, ' tips ');
  const enrolment = await until(
    async () => db.selectFrom('automation_sequence_enrolments').selectAll().where('contact_id', '=', first.contactId).executeTakeFirst(),
    10_000,
    'the enrolment',
  );
  expect(enrolment).toMatchObject({ status: 'active', phone_number_id: w.numberId });
  // The message that enrolled the contact, dispatched again late (a busy or restarted instance):
  // sent before the enrolment, it is no reply to it.
  await stopOnReply(app.platform, {
    workspaceId: w.workspaceId,
    messageId: first.messageId,
    contactId: first.contactId,
    phoneNumberId: w.numberId,
    businessAccountId: w.accountId,
    from: phone,
    type: 'text',
    text: ' tips ',
  });
  expect((await db.selectFrom('automation_sequence_enrolments').select('status').where('id', '=', enrolment.id).executeTakeFirstOrThrow()).status).toBe(
    'active',
  );
  await inboundText(app, w, phone, 'stop it');
  await until(
    async () =>
      (await db.selectFrom('automation_sequence_enrolments').select('status').where('id', '=', enrolment.id).executeTakeFirstOrThrow()).status === 'stopped',
    10_000,
    'the stop',
  );
  expect(await outbound(app, phone)).toHaveLength(0);
}, 60_000);

it('A-15 opting out (keyword or API) ends active enrolments; a tag does not enrol an opted-out contact', async () => {
  const app = await build({ env });
  const w = await workspace(app);
  const db = app.platform.store.db;
  const call = api(app, w.key);
  const tag = await addTag(app, w.workspaceId, 'vip');
  const now = new Date();
  const sequence = (name: string, trigger: object) => ({
    id: newId('seq'),
    workspace_id: w.workspaceId,
    business_account_id: w.accountId,
    phone_number_id: w.numberId,
    name,
    status: 'active' as const,
    trigger: JSON.stringify(trigger),
    steps: JSON.stringify([{ position: 1, delay: 10, delay_unit: 'minutes', message_type: 'text', text: 'Tip 1', template_id: null, language: null }]),
    stop_on_reply: false, // a reply alone would not stop it
    created_at: now,
    updated_at: now,
  });
  await db
    .insertInto('automation_sequences')
    .values([sequence('Tips', { type: 'keyword', tag_id: null, keyword: 'TIPS' }), sequence('VIP', { type: 'tag_added', tag_id: tag, keyword: null })])
    .execute();
  const statusOf = async (contactId: string) =>
    (await db.selectFrom('automation_sequence_enrolments').select('status').where('contact_id', '=', contactId).executeTakeFirst())?.status;
  const byKeyword = await inboundText(app, w, '+4915112340021', 'tips');
  const byApi = await inboundText(app, w, '+4915112340022', 'tips');
  await until(async () => (await statusOf(byKeyword.contactId)) === 'active' && (await statusOf(byApi.contactId)) === 'active', 10_000, 'the enrolments');

  await inboundText(app, w, '+4915112340021', 'STOP');
  expect((await call('PUT', `/api/contacts/${byApi.contactId}`, { opted_out: true })).statusCode).toBe(200);
  await until(async () => (await statusOf(byKeyword.contactId)) === 'stopped', 10_000, 'the keyword opt-out');
  expect(await statusOf(byApi.contactId)).toBe('stopped');

  // Tagged after opting out: not enrolled; a contact tagged beside it is.
  const optedOut = (await call('POST', '/api/contacts', { contact_no: '+4915112340023' })).json();
  expect((await call('PUT', `/api/contacts/${optedOut.id}`, { opted_out: true })).statusCode).toBe(200);
  const control = (await call('POST', '/api/contacts', { contact_no: '+4915112340024' })).json();
  for (const id of [optedOut.id, control.id]) expect((await call('PUT', `/api/contacts/${id}`, { tags: ['vip'] })).statusCode).toBe(200);
  await until(async () => (await statusOf(control.id)) === 'active', 10_000, 'the control enrolment');
  expect(await statusOf(optedOut.id)).toBeUndefined();
}, 60_000);
