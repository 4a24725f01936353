// createSequence: a sequence made through the API enrols and sends like any other (tag, keyword),
// is listed, and every bad body is refused with the right status, the field named, nothing stored.
import { beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { newId } from '#server/lib/ids.js';
import { createSandboxAccount } from '#server/providers/sandbox.js';
import { addTag, api, inboundText, outbound, templateId, until, workspace, type Workspace } from './support.js';
import { elapse } from '#test/support/eventually.js';

const env = { AUTOMATION_POLL_MS: '200' };
const text = (t: string, delay = 0, unit = 'minutes') => ({ delay, delay_unit: unit, message_type: 'text', text: t });
const template = (id: string, delay = 0, unit = 'minutes', extra: Record<string, unknown> = {}) => ({
  delay,
  delay_unit: unit,
  message_type: 'template',
  template_id: id,
  ...extra,
});

let app: FastifyInstance;
let w: Workspace;
let other: Workspace;
let tag: string;
let welcome: string;

beforeAll(async () => {
  app = await buildShared({ env });
  w = await workspace(app);
  other = await workspace(app);
  tag = await addTag(app, w.workspaceId, 'new-patient');
  welcome = await templateId(app, w.workspaceId, 'welcome_offer');
}, 240_000);

const create = (body: Record<string, unknown>, ws: Workspace = w) => api(app, ws.key)('POST', '/api/sequences', body);
const base = (extra: Record<string, unknown> = {}) => ({
  name: 'Onboarding',
  waba_id: w.accountId,
  trigger: { type: 'tag_added', tag_id: tag },
  steps: [template(welcome)],
  ...extra,
});
const stored = async (ws: Workspace = w) =>
  Number(
    (
      await app.platform.store.db
        .selectFrom('automation_sequences')
        .select(sql<string>`count(*)`.as('n'))
        .where('workspace_id', '=', ws.workspaceId)
        .executeTakeFirstOrThrow()
    ).n,
  );

/** The refusal, checked to store nothing. */
async function refused(body: Record<string, unknown>, status: number, pointer: string, ws: Workspace = w) {
  const before = await stored(ws);
  const res = await create(body, ws);
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  const problem = res.json();
  expect(problem.status).toBe(status);
  expect(problem.errors.map((e: { pointer: string }) => e.pointer)).toContain(pointer);
  expect(await stored(ws)).toBe(before);
  return problem;
}

describe('createSequence', () => {
  it('creates a tag_added sequence; a tagged contact gets each step once; listSequences shows it', async () => {
    const db = app.platform.store.db;
    const res = await create(base({ phone_number_id: w.numberId, steps: [text('Welcome! Reply any time.'), template(welcome, 1, 'days')] }));
    expect(res.statusCode, res.body).toBe(201);
    const seq = res.json();
    expect(seq).toMatchObject({
      id: expect.stringMatching(/^seq_/),
      name: 'Onboarding',
      waba_id: w.accountId,
      phone_number_id: w.numberId,
      status: 'active',
      stop_on_reply: true,
      trigger: { type: 'tag_added', tag_id: tag, keyword: null },
      steps: [
        { position: 1, delay: 0, delay_unit: 'minutes', message_type: 'text', text: 'Welcome! Reply any time.', template_id: null, language: null },
        { position: 2, delay: 1, delay_unit: 'days', message_type: 'template', text: null, template_id: welcome, language: 'en_US' },
      ],
      enrolled_count: 0,
      completed_count: 0,
    });

    // The contact wrote before (window open), then gets the tag.
    const phone = '+4915112345001';
    const first = await inboundText(app, w, phone, 'hello');
    await db.insertInto('contact_tags').values({ contact_id: first.contactId, tag_id: tag }).execute();
    await until(async () => (await outbound(app, phone)).length === 1, 10_000, 'step 1');
    // The step is settled in its own write after the send: wait for it rather than race it.
    const enrolment = await until(
      async () => {
        const row = await db.selectFrom('automation_sequence_enrolments').selectAll().where('sequence_id', '=', seq.id).executeTakeFirstOrThrow();
        return row.next_step === 2 ? row : undefined;
      },
      10_000,
      'step 1 settled',
    );
    expect(enrolment).toMatchObject({ contact_id: first.contactId, status: 'active', next_step: 2, phone_number_id: w.numberId });
    expect((await outbound(app, phone))[0]!.type).toBe('text');

    const listed = (await api(app, w.key)('GET', `/api/sequences?waba_id=${w.accountId}`)).json();
    expect(listed.data.find((s: { id: string }) => s.id === seq.id)).toMatchObject({
      ...seq,
      enrolled_count: 1,
      completed_count: 0,
      created_at: seq.created_at,
    });

    // A day passes.
    await db
      .updateTable('automation_sequence_enrolments')
      .set({ fire_at: new Date(Date.now() - 1000) })
      .where('id', '=', enrolment.id)
      .execute();
    await until(
      async () =>
        (await db.selectFrom('automation_sequence_enrolments').select('status').where('id', '=', enrolment.id).executeTakeFirstOrThrow()).status ===
        'completed',
      10_000,
      'completion',
    );
    const sent = await outbound(app, phone);
    expect(sent.map((m) => m.type)).toEqual(['text', 'template']);
  }, 60_000);

  it('a keyword sequence made through the API enrols who writes the keyword, from the number they wrote to', async () => {
    const res = await create({
      name: 'Tips',
      waba_id: w.accountId,
      trigger: { type: 'keyword', keyword: '  Tips ' },
      steps: [text('Tip 1: floss daily.')],
      stop_on_reply: false,
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ trigger: { type: 'keyword', tag_id: null, keyword: 'Tips' }, stop_on_reply: false, phone_number_id: null });
    const phone = '+4915112345002';
    await inboundText(app, w, phone, 'TIPS');
    await until(async () => (await outbound(app, phone)).length === 1, 10_000, 'the tip');
  }, 30_000);

  it('waba_id may be the provider id; an inactive sequence may hold a template not yet approved', async () => {
    const account = await app.platform.store.db
      .selectFrom('business_accounts')
      .select('provider_waba_id')
      .where('id', '=', w.accountId)
      .executeTakeFirstOrThrow();
    const rejected = await templateId(app, w.workspaceId, 'spring_rejected');
    const res = await create(
      base({ waba_id: account.provider_waba_id, status: 'inactive', trigger: { type: 'contact_created' }, steps: [template(rejected)] }),
    );
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ waba_id: w.accountId, status: 'inactive', trigger: { type: 'contact_created', tag_id: null, keyword: null } });
  });

  it('text steps 24 hours after enrolment are allowed when a reply does not stop the sequence', async () => {
    const res = await create(base({ stop_on_reply: false, steps: [text('Hi'), text('Still there?', 2, 'days')] }));
    expect(res.statusCode, res.body).toBe(201);
  });

  // ---- 404: references the workspace does not have (another workspace's answers the same)
  it('B3 unknown tag: 404 naming trigger.tag_id', async () => {
    await refused(base({ trigger: { type: 'tag_added', tag_id: 'tag_0000000000000000' } }), 404, '/body/trigger/tag_id');
  });

  it("B3 another workspace's tag: 404, same body as an unknown tag", async () => {
    const theirs = await addTag(app, other.workspaceId, 'theirs');
    const a = await refused(base({ trigger: { type: 'tag_added', tag_id: theirs } }), 404, '/body/trigger/tag_id');
    const b = await refused(base({ trigger: { type: 'tag_added', tag_id: 'tag_0000000000000000' } }), 404, '/body/trigger/tag_id');
    expect({ ...a, detail: a.detail.replace(theirs, 'X'), instance: null, request_id: null }).toEqual({
      ...b,
      detail: b.detail.replace('tag_0000000000000000', 'X'),
      instance: null,
      request_id: null,
    });
  });

  it("B3 another workspace's template: 404 naming steps/0/template_id", async () => {
    const theirs = await templateId(app, other.workspaceId, 'welcome_offer');
    await refused(base({ steps: [template(theirs)] }), 404, '/body/steps/0/template_id');
  });

  it('unknown template: 404 naming steps/1/template_id', async () => {
    await refused(base({ steps: [text('Hi'), template('tpl_0000000000000000')] }), 404, '/body/steps/1/template_id');
  });

  it("B3 another workspace's business account: 404 naming waba_id, same body as an unknown one", async () => {
    const a = await refused(base({ waba_id: other.accountId }), 404, '/body/waba_id');
    expect(a.detail).toBe(`No business account ${other.accountId} in this workspace.`);
    const b = await refused(base({ waba_id: 'waba_0000000000000000' }), 404, '/body/waba_id');
    expect(b.detail).toBe('No business account waba_0000000000000000 in this workspace.');
  });

  it("B3 another workspace's phone number: 404 naming phone_number_id", async () => {
    await refused(base({ phone_number_id: other.numberId }), 404, '/body/phone_number_id');
  });

  // ---- 422: the sequence could not send a step
  it('template not approved, sequence active: 422', async () => {
    const p = await refused(base({ steps: [template(await templateId(app, w.workspaceId, 'spring_rejected'))] }), 422, '/body/steps/0/template_id');
    expect(p.detail).toMatch(/REJECTED/);
  });

  it('template with body variables: 422 (a sequence sends no values)', async () => {
    const p = await refused(base({ steps: [template(await templateId(app, w.workspaceId, 'order_shipped'))] }), 422, '/body/steps/0/template_id');
    expect(p.detail).toMatch(/needs values/);
  });

  it('template with a media header and no sample: 422', async () => {
    await refused(base({ steps: [template(await templateId(app, w.workspaceId, 'invoice_ready'))] }), 422, '/body/steps/0/template_id');
  });

  it("template in another language than the step's: 422 naming language", async () => {
    await refused(base({ steps: [template(welcome, 0, 'minutes', { language: 'de' })] }), 422, '/body/steps/0/language');
  });

  it('template of another business account of the same workspace: 422', async () => {
    const db = app.platform.store.db;
    const { account: second } = await createSandboxAccount(db, w.workspaceId, { name: 'Second' });
    const tpl = await db
      .insertInto('message_templates')
      .values({
        id: newId('tpl'),
        workspace_id: w.workspaceId,
        business_account_id: second.id,
        name: 'other_account',
        language: 'en_US',
        category: 'UTILITY',
        status: 'APPROVED',
        components: JSON.stringify([{ type: 'BODY', text: 'Hi.' }]),
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    await refused(base({ steps: [template(tpl.id)] }), 422, '/body/steps/0/template_id');
  });

  it('text step 24 hours after enrolment with stop_on_reply: 422 (the window is closed by then)', async () => {
    const p = await refused(base({ steps: [text('Hi', 23, 'hours'), text('Still there?', 60, 'minutes')] }), 422, '/body/steps/1/message_type');
    expect(p.detail).toMatch(/use a template/);
  });

  // ---- 400: the body's shape
  it('empty steps: 400', async () => {
    await refused(base({ steps: [] }), 400, '/body/steps');
  });

  it('bad delay unit: 400', async () => {
    await refused(base({ steps: [{ ...template(welcome), delay_unit: 'weeks' }] }), 400, '/body/steps/0/delay_unit');
  });

  it('negative delay: 400', async () => {
    await refused(base({ steps: [template(welcome, -1)] }), 400, '/body/steps/0/delay');
  });

  it('delays adding up to more than 365 days: 400', async () => {
    await refused(base({ steps: [template(welcome, 200, 'days'), template(welcome, 200, 'days')] }), 400, '/body/steps');
  });

  it('tag_added without tag_id: 400 naming it', async () => {
    await refused(base({ trigger: { type: 'tag_added' } }), 400, '/body/trigger/tag_id');
  });

  it('keyword trigger with a blank keyword: 400', async () => {
    await refused(base({ trigger: { type: 'keyword', keyword: '   ' } }), 400, '/body/trigger/keyword');
  });

  it('contact_created with a tag_id: 400', async () => {
    await refused(base({ trigger: { type: 'contact_created', tag_id: tag } }), 400, '/body/trigger/tag_id');
  });

  it('text step with a template_id, template step without one: 400 naming both', async () => {
    const p = await refused(
      base({
        steps: [
          { ...text('Hi'), template_id: welcome },
          { delay: 0, delay_unit: 'minutes', message_type: 'template' },
        ],
      }),
      400,
      '/body/steps/0/template_id',
    );
    expect(p.errors.map((e: { pointer: string }) => e.pointer)).toContain('/body/steps/1/template_id');
  });

  it('text longer than 4096 characters: 400', async () => {
    await refused(base({ steps: [text('x'.repeat(4097))] }), 400, '/body/steps/0/text');
  });

  it('unknown property: 400', async () => {
    await refused(base({ enrol_existing: true }), 400, '/body/enrol_existing');
  });

  it('unknown trigger type: 400', async () => {
    await refused(base({ trigger: { type: 'birthday' } }), 400, '/body/trigger/type');
  });

  it('B8 malformed tag id: 400', async () => {
    await refused(base({ trigger: { type: 'tag_added', tag_id: 'abc' } }), 400, '/body/trigger/tag_id');
  });

  // ---- 409
  it('a second active sequence with the same keyword (any case): 409; an inactive one is fine', async () => {
    const first = await create({ name: 'Promo', waba_id: w.accountId, trigger: { type: 'keyword', keyword: 'promo' }, steps: [template(welcome)] });
    expect(first.statusCode, first.body).toBe(201);
    const p = await refused(
      { name: 'Promo 2', waba_id: w.accountId, trigger: { type: 'keyword', keyword: 'PROMO ' }, steps: [template(welcome)] },
      409,
      '/body/trigger/keyword',
    );
    expect(p.detail).toContain(first.json().id);
    const paused = await create({
      name: 'Promo 2',
      waba_id: w.accountId,
      status: 'inactive',
      trigger: { type: 'keyword', keyword: 'PROMO' },
      steps: [template(welcome)],
    });
    expect(paused.statusCode, paused.body).toBe(201);
  });
});

describe('updateSequence', () => {
  const patch = (id: string, body: Record<string, unknown>, ws: Workspace = w) => api(app, ws.key)('PATCH', `/api/sequences/${id}`, body);
  const made = async (extra: Record<string, unknown> = {}) => {
    const res = await create(base(extra));
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as { id: string; name: string; status: string; updated_at: string };
  };

  it('pausing holds a due step; resuming sends it', async () => {
    const db = app.platform.store.db;
    const pauseTag = await addTag(app, w.workspaceId, 'pause-test');
    const seq = await made({ trigger: { type: 'tag_added', tag_id: pauseTag }, steps: [template(welcome, 1, 'days')] });
    const phone = '+4915112345003';
    const contact = await inboundText(app, w, phone, 'hi');
    await db.insertInto('contact_tags').values({ contact_id: contact.contactId, tag_id: pauseTag }).execute();
    const enrolment = await until(
      async () => db.selectFrom('automation_sequence_enrolments').selectAll().where('sequence_id', '=', seq.id).executeTakeFirst(),
      10_000,
      'the enrolment',
    );

    const paused = await patch(seq.id, { status: 'inactive' });
    expect(paused.statusCode, paused.body).toBe(200);
    expect(paused.json()).toMatchObject({ id: seq.id, status: 'inactive', enrolled_count: 1 });
    await db
      .updateTable('automation_sequence_enrolments')
      .set({ fire_at: new Date(Date.now() - 1000) })
      .where('id', '=', enrolment.id)
      .execute();
    await elapse(1500, 'absence: a paused sequence must send nothing on the next polls (200 ms)');
    expect(await outbound(app, phone)).toHaveLength(0);

    const resumed = await patch(seq.id, { status: 'active' });
    expect(resumed.statusCode, resumed.body).toBe(200);
    expect(resumed.json().status).toBe('active');
    await until(async () => (await outbound(app, phone)).length === 1, 10_000, 'the held step');
  }, 60_000);

  it('renames without touching the status; an empty patch changes nothing', async () => {
    const seq = await made();
    const renamed = await patch(seq.id, { name: 'Renamed' });
    expect(renamed.statusCode, renamed.body).toBe(200);
    expect(renamed.json()).toMatchObject({ name: 'Renamed', status: 'active' });
    const same = await patch(seq.id, {});
    expect(same.statusCode).toBe(200);
    expect(same.json()).toEqual(renamed.json());
  });

  it("B1 unknown sequence and another workspace's: 404, same body", async () => {
    const theirs = await made();
    const a = await patch(theirs.id, { status: 'inactive' }, other);
    const b = await patch('seq_0000000000000000', { status: 'inactive' }, other);
    expect([a.statusCode, b.statusCode]).toEqual([404, 404]);
    expect({ ...a.json(), detail: a.json().detail.replace(theirs.id, 'X'), request_id: null, instance: null }).toEqual({
      ...b.json(),
      detail: b.json().detail.replace('seq_0000000000000000', 'X'),
      request_id: null,
      instance: null,
    });
    expect((await app.platform.store.db.selectFrom('automation_sequences').select('status').where('id', '=', theirs.id).executeTakeFirstOrThrow()).status).toBe(
      'active',
    );
  });

  it('resuming with a template no longer approved: 422, stays inactive', async () => {
    const db = app.platform.store.db;
    const { id: tpl } = await db
      .insertInto('message_templates')
      .values({
        id: newId('tpl'),
        workspace_id: w.workspaceId,
        business_account_id: w.accountId,
        name: 'soon_paused',
        language: 'en_US',
        category: 'UTILITY',
        status: 'APPROVED',
        components: JSON.stringify([{ type: 'BODY', text: 'Hi.' }]),
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const seq = await made({ status: 'inactive', steps: [template(tpl)] });
    await db.updateTable('message_templates').set({ status: 'PAUSED' }).where('id', '=', tpl).execute();
    const res = await patch(seq.id, { status: 'active' });
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().detail).toMatch(/PAUSED/);
    expect((await db.selectFrom('automation_sequences').select('status').where('id', '=', seq.id).executeTakeFirstOrThrow()).status).toBe('inactive');
  });

  it('resuming a keyword another active sequence took meanwhile: 409', async () => {
    const keyword = { type: 'keyword', keyword: 'resume-me' };
    const paused = await made({ status: 'inactive', trigger: keyword });
    await made({ trigger: keyword });
    const res = await patch(paused.id, { status: 'active' });
    expect(res.statusCode, res.body).toBe(409);
  });

  it('unknown property or status: 400', async () => {
    const seq = await made();
    expect((await patch(seq.id, { steps: [] })).statusCode).toBe(400);
    expect((await patch(seq.id, { status: 'paused' })).statusCode).toBe(400);
    expect((await patch(seq.id, { name: '' })).statusCode).toBe(400);
  });
});
