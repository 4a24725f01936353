// Forms in the sandbox: create (the provider Flow made at once, as a DRAFT), list, publish, each
// refusal (one test each, nothing stored), and another workspace's ids answering 404.
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { createForm, formBody, formCount, listForms, PROBLEMS, publishForm, tenant, withFields, type Tenant } from './support.js';

let app: FastifyInstance;
beforeAll(async () => {
  app = await buildShared();
}, 240_000);

const ready = async () => withFields(app, await tenant(app));

/** One refusal: the status, the problem type, the pointer named, and no form stored. */
async function refused(t: Tenant, body: Record<string, unknown>, status: number, pointer?: string) {
  const res = await createForm(app, t, body);
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  const type = { 400: 'validation', 404: 'not-found', 409: 'conflict' }[status as 400 | 404 | 409];
  expect(res.json().type).toBe(`${PROBLEMS}${type}`);
  if (pointer) expect(res.json().errors?.map((e: { pointer: string }) => e.pointer)).toContain(pointer);
  return res;
}

describe('form operations (sandbox)', () => {
  it('createForm: 201, a DRAFT provider Flow whose flow_id is digits, not the form id', async () => {
    const t = await ready();
    const res = await createForm(app, t, formBody(t));
    expect(res.statusCode, res.body).toBe(201);
    const form = res.json();
    expect(form).toMatchObject({
      name: 'Appointment request',
      waba_id: t.wabaId,
      category: 'APPOINTMENT_BOOKING',
      title: 'Book a visit',
      submit_label: 'Send request',
      submission_count: 0,
      published_at: null,
    });
    expect(form.id).toMatch(/^form_/);
    expect(form.flow.status).toBe('DRAFT');
    expect(form.flow.flow_id).toMatch(/^\d+$/);
    expect(form.flow.flow_id).not.toBe(form.id);
    // Defaults filled in: required false where not given.
    expect(form.fields[1]).toEqual({ name: 'email', label: 'E-mail', type: 'email', required: false });
  });

  it('createForm defaults: category OTHER, title from the name (30 characters), submit label Submit', async () => {
    const t = await ready();
    const res = await createForm(app, t, {
      name: 'A rather long form name for the dashboard',
      waba_id: t.wabaId,
      fields: [{ name: 'note', label: 'Note', type: 'textarea' }],
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ category: 'OTHER', title: 'A rather long form name for th', submit_label: 'Submit' });
  });

  it('listForms: newest first, paged with a signed cursor, by our or the provider account id', async () => {
    const t = await ready();
    const ids: string[] = [];
    for (const name of ['One', 'Two', 'Three']) ids.push((await createForm(app, t, formBody(t, { name }))).json().id);
    const first = await listForms(app, t, `waba_id=${t.wabaId}&limit=2`);
    expect(first.statusCode).toBe(200);
    expect(first.json().data.map((f: { id: string }) => f.id)).toEqual([ids[2], ids[1]]);
    expect(first.json().has_more).toBe(true);
    const second = await listForms(app, t, `waba_id=${t.wabaId}&limit=2&cursor=${first.json().next_cursor}`);
    expect(second.json()).toMatchObject({ has_more: false, next_cursor: null });
    expect(second.json().data.map((f: { id: string }) => f.id)).toEqual([ids[0]]);
    const provider = await app.platform.store.db
      .selectFrom('business_accounts')
      .select('provider_waba_id')
      .where('id', '=', t.wabaId)
      .executeTakeFirstOrThrow();
    expect((await listForms(app, t, `waba_id=${provider.provider_waba_id}`)).json().data).toHaveLength(3);
  });

  it('listForms: a cursor of another listing is refused', async () => {
    const t = await ready();
    for (const name of ['One', 'Two']) await createForm(app, t, formBody(t, { name }));
    const page = await listForms(app, t, `waba_id=${t.wabaId}&limit=1`);
    const other = await app.inject({ method: 'GET', url: `/api/chatbots?waba_id=${t.wabaId}&cursor=${page.json().next_cursor}`, headers: t.headers });
    expect(other.statusCode).toBe(400);
  });

  it('publishForm: PUBLISHED with published_at; a second publish is 409 and changes nothing', async () => {
    const t = await ready();
    const form = (await createForm(app, t, formBody(t))).json();
    const res = await publishForm(app, t, form.id);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ id: form.id, flow: { flow_id: form.flow.flow_id, status: 'PUBLISHED' } });
    expect(res.json().published_at).not.toBeNull();
    const again = await publishForm(app, t, form.id);
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ type: `${PROBLEMS}conflict`, detail: `Form ${form.id} is already published (flow ${form.flow.flow_id}).` });
    expect((await listForms(app, t, `waba_id=${t.wabaId}`)).json().data[0].published_at).toBe(res.json().published_at);
  });

  it('publishForm by the provider flow_id instead of the form id: 400 from the contract (paths take the form id)', async () => {
    const t = await ready();
    const form = (await createForm(app, t, formBody(t))).json();
    const res = await publishForm(app, t, form.flow.flow_id);
    expect(res.statusCode).toBe(400);
    expect(res.json().type).toBe(`${PROBLEMS}validation`);
    expect((await listForms(app, t, `waba_id=${t.wabaId}`)).json().data[0].flow.status).toBe('DRAFT');
  });

  it('a form whose fields fill more than one screen still publishes (screens of 8 fields)', async () => {
    const t = await ready();
    const fields = Array.from({ length: 20 }, (_, i) => ({ name: `answer_${i}`, label: `Answer ${i}`, type: 'text' }));
    const form = await createForm(app, t, formBody(t, { name: 'Long survey', fields }));
    expect(form.statusCode, form.body).toBe(201);
    expect((await publishForm(app, t, form.json().id)).statusCode).toBe(200);
  });
});

describe('createForm bad inputs (one each, nothing stored)', () => {
  const field = (extra: Record<string, unknown>) => [{ name: 'pick', label: 'Pick', type: 'radio', options: [{ id: 'a', title: 'A' }], ...extra }];

  it('a radio field without options: 400 naming /body/fields/0/options', async () => {
    const t = await ready();
    const res = await refused(t, formBody(t, { fields: [{ name: 'rating', label: 'Rating', type: 'radio' }] }), 400, '/body/fields/0/options');
    expect(res.json().errors).toEqual([{ pointer: '/body/fields/0/options', detail: 'required for radio fields' }]);
    expect(await formCount(app, t)).toBe(0);
  });

  it('options on a text field: 400', async () => {
    const t = await ready();
    await refused(
      t,
      formBody(t, { fields: [{ name: 'city', label: 'City', type: 'text', options: [{ id: 'a', title: 'A' }] }] }),
      400,
      '/body/fields/0/options',
    );
    expect(await formCount(app, t)).toBe(0);
  });

  it('two fields with one name: 400 naming the second', async () => {
    const t = await ready();
    await refused(
      t,
      formBody(t, {
        fields: [
          { name: 'city', label: 'City', type: 'text' },
          { name: 'city', label: 'Town', type: 'text' },
        ],
      }),
      400,
      '/body/fields/1/name',
    );
    expect(await formCount(app, t)).toBe(0);
  });

  it('a reserved field name (form_id): 400', async () => {
    const t = await ready();
    await refused(t, formBody(t, { fields: [{ name: 'form_id', label: 'Form', type: 'text' }] }), 400, '/body/fields/0/name');
    expect(await formCount(app, t)).toBe(0);
  });

  it('an option id used twice in a field: 400', async () => {
    const t = await ready();
    await refused(
      t,
      formBody(t, {
        fields: field({
          options: [
            { id: 'a', title: 'A' },
            { id: 'a', title: 'B' },
          ],
        }),
      }),
      400,
      '/body/fields/0/options/1/id',
    );
    expect(await formCount(app, t)).toBe(0);
  });

  it('a label longer than the provider allows for its component (TextInput: 20): 400', async () => {
    const t = await ready();
    const res = await refused(t, formBody(t, { fields: [{ name: 'city', label: 'The city where you live', type: 'text' }] }), 400, '/body/fields/0/label');
    expect(res.json().errors[0].detail).toBe("at most 20 characters for text fields (the provider's limit)");
    expect(await formCount(app, t)).toBe(0);
  });

  it('custom_field naming no attribute or custom field: 400', async () => {
    const t = await ready();
    await refused(t, formBody(t, { fields: [{ name: 'city', label: 'City', type: 'text', custom_field: 'hometown' }] }), 400, '/body/fields/0/custom_field');
    expect(await formCount(app, t)).toBe(0);
  });

  it('two fields storing into one custom field: 400', async () => {
    const t = await ready();
    await refused(
      t,
      formBody(t, {
        fields: [
          { name: 'a', label: 'A', type: 'number', custom_field: 'party_size' },
          { name: 'b', label: 'B', type: 'number', custom_field: 'party_size' },
        ],
      }),
      400,
      '/body/fields/1/custom_field',
    );
    expect(await formCount(app, t)).toBe(0);
  });

  it("another workspace's custom field does not count: 400", async () => {
    const [t, other] = [await tenant(app), await ready()];
    void other;
    await refused(
      t,
      formBody(t, { fields: [{ name: 'size', label: 'Size', type: 'number', custom_field: 'party_size' }] }),
      400,
      '/body/fields/0/custom_field',
    );
    expect(await formCount(app, t)).toBe(0);
  });

  it('no fields: 400 from the contract', async () => {
    const t = await ready();
    await refused(t, formBody(t, { fields: [] }), 400);
    expect(await formCount(app, t)).toBe(0);
  });

  it('an unknown field type: 400 from the contract', async () => {
    const t = await ready();
    await refused(t, formBody(t, { fields: [{ name: 'photo', label: 'Photo', type: 'file' }] }), 400);
    expect(await formCount(app, t)).toBe(0);
  });

  it('a field name that is no key (upper case, spaces): 400 from the contract', async () => {
    const t = await ready();
    await refused(t, formBody(t, { fields: [{ name: 'Full Name', label: 'Name', type: 'text' }] }), 400);
    expect(await formCount(app, t)).toBe(0);
  });

  it('an unknown property in the body: 400', async () => {
    const t = await ready();
    await refused(t, formBody(t, { flow_json: '{}' }), 400);
    expect(await formCount(app, t)).toBe(0);
  });

  it('an unknown category: 400', async () => {
    const t = await ready();
    await refused(t, formBody(t, { category: 'SHOPPING' }), 400);
    expect(await formCount(app, t)).toBe(0);
  });

  it('a name already used in the business account: 409, no second Flow', async () => {
    const t = await ready();
    expect((await createForm(app, t, formBody(t))).statusCode).toBe(201);
    const res = await refused(t, formBody(t), 409, '/body/name');
    expect(res.json().detail).toBe("A form named 'Appointment request' already exists in this business account.");
    expect(await formCount(app, t)).toBe(1);
  });

  it('an unknown business account: 404', async () => {
    const t = await ready();
    await refused(t, formBody(t, { waba_id: 'waba_0000000000000000' }), 404, '/body/waba_id');
    expect(await formCount(app, t)).toBe(0);
  });
});

describe("another workspace's ids (B2): 404, the same body as an unknown id", () => {
  it("createForm in another workspace's business account", async () => {
    const [t, other] = [await ready(), await ready()];
    const res = await refused(t, formBody(t, { waba_id: other.wabaId }), 404, '/body/waba_id');
    expect(res.json().detail).toBe(`No business account ${other.wabaId} in this workspace.`);
    expect(await formCount(app, t)).toBe(0);
    expect(await formCount(app, other)).toBe(0);
  });

  it("listForms of another workspace's business account", async () => {
    const [t, other] = [await ready(), await ready()];
    await createForm(app, other, formBody(other));
    const res = await listForms(app, t, `waba_id=${other.wabaId}`);
    expect(res.statusCode).toBe(404);
    expect(res.json().type).toBe(`${PROBLEMS}not-found`);
  });

  it("publishForm of another workspace's form: 404 like an unknown one, and it stays a draft", async () => {
    const [t, other] = [await ready(), await ready()];
    const form = (await createForm(app, other, formBody(other))).json();
    const res = await publishForm(app, t, form.id);
    const unknown = await publishForm(app, t, 'form_0000000000000000');
    expect(res.statusCode).toBe(404);
    expect(unknown.statusCode).toBe(404);
    expect(res.json().detail).toBe(`No form ${form.id} in this workspace.`);
    expect(unknown.json().detail).toBe('No form form_0000000000000000 in this workspace.');
    expect((await listForms(app, other, `waba_id=${other.wabaId}`)).json().data[0].flow.status).toBe('DRAFT');
  });
});
