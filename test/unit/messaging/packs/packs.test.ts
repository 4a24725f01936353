// Industry packs on the sandbox: the public catalogue and previews (substitution, missing
// values, bad-inputs J7 literal values), applying once and again (no duplicates), matching existing items,
// and every refusal changing nothing (bad-inputs H2, H3, H8, B3).
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { sql } from 'kysely';
import { ProviderError } from '#server/providers/types.js';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { tenant, type Tenant } from '../inbox/support.js';
import { apply, CLINIC, packCounts, PROBLEMS } from './support.js';

let app: FastifyInstance;
let a: Tenant;
let b: Tenant;

beforeAll(async () => {
  app = await buildShared();
  a = await tenant(app);
  b = await tenant(app);
}, 240_000);

afterEach(() => vi.restoreAllMocks());

const preview = (slug: string, query = '') => app.inject({ method: 'GET', url: `/api/industry-packs/public/${slug}/preview${query}` });

describe('listIndustryPacks', () => {
  it('lists the three packs without a credential, with counts of what they hold', async () => {
    const res = await app.inject({ method: 'GET', url: '/api/industry-packs/public' });
    expect(res.statusCode, res.body).toBe(200);
    const packs = res.json().data;
    expect(packs.map((p: { slug: string }) => p.slug)).toEqual(['dental-clinic', 'real-estate', 'restaurant']);
    const clinic = packs[0];
    expect(clinic.contents).toEqual({ templates: 2, tags: 2, custom_fields: 2, quick_replies: 2, flows: 2, funnels: 1 });
    expect(clinic.variables.map((v: { name: string; required: boolean }) => [v.name, v.required])).toEqual([
      ['company_name', true],
      ['city', true],
      ['opening_hours', false],
    ]);
  });
});

describe('previewIndustryPack', () => {
  it('fills company_name and city into templates, quick replies and flows; run-time placeholders stay', async () => {
    const res = await preview('dental-clinic', '?company_name=Smile%20Dental&city=Lisbon');
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.missing_variables).toEqual([]);
    expect(body.variables).toEqual({ company_name: 'Smile Dental', city: 'Lisbon', opening_hours: 'we will confirm them in a moment' });
    expect(body.templates[0].body).toBe(
      'Hello {{1}}, Smile Dental in Lisbon reminds you of your appointment on {{2}}. Reply YES to confirm or NO to reschedule.',
    );
    expect(body.quick_replies[0].text).toBe('Our opening hours at Smile Dental: we will confirm them in a moment.');
    const greet = body.flows[0].nodes.find((n: { id: string }) => n.id === 'greet');
    expect(greet.parameters.text).toBe('Welcome to Smile Dental in Lisbon, {{contact.name}}! Write BOOK to request an appointment.');
    expect(body.flows[0].nodes.find((n: { id: string }) => n.id === 'tag_new').parameters.tag_id).toBe('pack:tag/new_patient');
    expect(body.funnels[0].stages.map((s: { key: string }) => s.key)).toEqual(['new_lead', 'booked', 'treated']);
  });

  it('a required variable without a value stays {{name}} and is listed in missing_variables', async () => {
    const res = await preview('restaurant', '?city=Porto');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().missing_variables).toEqual(['company_name']);
    expect(res.json().templates[1].body).toContain('ready for pickup at {{company_name}}.');
    expect(res.json().templates[0].body).toContain('in Porto');
  });

  it('an optional variable given replaces its default', async () => {
    const res = await preview('restaurant', '?company_name=Casa&city=Porto&opening_hours=every%20day%2012-23');
    expect(res.json().quick_replies[0].text).toBe('Casa is open every day 12-23.');
  });

  it('J7 values are inserted literally, once: ${…} and a value naming another variable stay as typed', async () => {
    const res = await preview('real-estate', `?company_name=${encodeURIComponent('${process.env.SECRET_KEY}')}&city=city`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().quick_replies[2].text).toBe('${process.env.SECRET_KEY} values your property for free. Send us the address and a good time to visit.');
  });

  it('J7 a value holding {{1}} or {{contact.phone}}: 400 naming the parameter (it would become a placeholder)', async () => {
    const res = await preview('dental-clinic', `?company_name=${encodeURIComponent('{{contact.phone}}')}&city=${encodeURIComponent('{{1}}')}`);
    expect(res.statusCode).toBe(400);
    expect(res.json().type).toBe(`${PROBLEMS}validation`);
    expect(
      res
        .json()
        .errors.map((e: { pointer: string }) => e.pointer)
        .sort(),
    ).toEqual(['/query/city', '/query/company_name']);
  });

  it('unknown pack: 404 not-found', async () => {
    const res = await preview('space-station');
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ type: `${PROBLEMS}not-found`, detail: "No industry pack 'space-station'." });
  });

  it('B8 slug malformed (uppercase, 500 chars): 400 validation, never 500', async () => {
    for (const slug of ['Dental', 'a'.repeat(500), 'a%00b']) {
      const res = await preview(slug);
      expect(res.statusCode, slug).toBe(400);
      expect(res.json().type).toBe(`${PROBLEMS}validation`);
    }
  });

  it('H6 a value over 200 characters: 400 naming the parameter', async () => {
    const res = await preview('dental-clinic', `?company_name=${'x'.repeat(201)}`);
    expect(res.statusCode).toBe(400);
    expect(res.json().errors[0].pointer).toBe('/query/company_name');
  });
});

describe('applyIndustryPack', () => {
  it('creates every item in the workspace, templates submitted and stored as the provider answered', async () => {
    const res = await apply(app, a, { ...CLINIC, waba_id: a.wabaId });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ slug: 'dental-clinic', version: '1.0.0', waba_id: a.wabaId });
    expect(body.already_present).toEqual({ templates: [], tags: [], custom_fields: [], quick_replies: [], flows: [], funnels: [] });
    const c = body.created;
    expect(c.templates.map((i: { key: string }) => i.key)).toEqual(['appointment_reminder', 'checkup_recall']);
    expect(c.tags).toHaveLength(2);
    expect(c.custom_fields).toHaveLength(2);
    expect(c.quick_replies.map((i: { name: string }) => i.name)).toEqual(['hours', 'address']);
    expect(c.flows).toHaveLength(2);
    expect(c.funnels[0].id).toMatch(/^fnl_/);

    const db = app.platform.store.db;
    const tpl = await db.selectFrom('message_templates').selectAll().where('id', '=', c.templates[0].id).executeTakeFirstOrThrow();
    expect(tpl).toMatchObject({
      workspace_id: a.workspaceId,
      business_account_id: a.wabaId,
      name: 'appointment_reminder',
      language: 'en_US',
      category: 'UTILITY',
    });
    expect(tpl.provider_template_id).toBeTruthy();
    expect(['APPROVED', 'PENDING']).toContain(tpl.status);
    expect(JSON.stringify(tpl.components)).toContain('Smile Dental in Lisbon reminds you');

    const qr = await db.selectFrom('quick_replies').selectAll().where('id', '=', c.quick_replies[1].id).executeTakeFirstOrThrow();
    expect(qr.text).toBe('You will find Smile Dental in Lisbon. Reply here if you need directions.');
    const cf = await db.selectFrom('custom_fields').selectAll().where('id', '=', c.custom_fields[0].id).executeTakeFirstOrThrow();
    expect(cf).toMatchObject({ key: 'preferred_day', label: 'Preferred day', type: 'date' });

    // Flows are inactive, their pack references replaced by this workspace's ids.
    const flow = await db.selectFrom('automation_flows').selectAll().where('id', '=', c.flows[0].id).executeTakeFirstOrThrow();
    expect(flow).toMatchObject({ status: 'inactive', business_account_id: a.wabaId, name: 'Welcome new patients', version: 1 });
    const version = await db.selectFrom('automation_flow_versions').selectAll().where('flow_id', '=', flow.id).executeTakeFirstOrThrow();
    const graph = version.graph as { nodes: { id: string; parameters: Record<string, string> }[] };
    const newPatient = c.tags.find((t: { key: string }) => t.key === 'new_patient').id;
    expect(graph.nodes.find((n) => n.id === 'tag_new')!.parameters.tag_id).toBe(newPatient);
    expect(graph.nodes.find((n) => n.id === 'greet')!.parameters.text).toBe(
      'Welcome to Smile Dental in Lisbon, {{contact.name}}! Write BOOK to request an appointment.',
    );
    expect(JSON.stringify(graph)).not.toContain('pack:');

    const stages = await db.selectFrom('kanban_stages').selectAll().where('funnel_id', '=', c.funnels[0].id).orderBy('position').execute();
    expect(stages.map((s) => s.key)).toEqual(['new_lead', 'booked', 'treated']);
  });

  it('applied twice: nothing new, the same ids listed as already_present', async () => {
    const first = (await apply(app, b, { ...CLINIC, waba_id: b.wabaId })).json();
    const before = await packCounts(app);
    const res = await apply(app, b, { ...CLINIC, waba_id: b.wabaId });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().created).toEqual({ templates: [], tags: [], custom_fields: [], quick_replies: [], flows: [], funnels: [] });
    expect(res.json().already_present).toEqual(first.created);
    const after = await packCounts(app);
    expect({ ...after, industry_pack_applications: 0 }).toEqual({ ...before, industry_pack_applications: 0 });
  });

  it('existing items are matched (tag by name in any case, custom field by key, quick reply by shortcut) and left unchanged', async () => {
    const t = await tenant(app);
    const db = app.platform.store.db;
    const tag = await app.inject({ method: 'POST', url: '/api/tags', headers: t.headers, payload: { name: 'RESERVATION', color: '#000000' } });
    const field = await app.inject({
      method: 'POST',
      url: '/api/custom-fields',
      headers: t.headers,
      payload: { key: 'party_size', label: 'Guests', type: 'number' },
    });
    expect(tag.statusCode, tag.body).toBe(201);
    expect(field.statusCode, field.body).toBe(201);
    const res = await apply(app, t, { slug: 'restaurant', waba_id: t.wabaId, variables: { company_name: 'Casa Lisboa', city: 'Porto' } });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.already_present.tags).toEqual([{ key: 'reservation', id: tag.json().id, name: 'Reservation' }]);
    expect(body.already_present.custom_fields).toEqual([{ key: 'party_size', id: field.json().id, name: 'Party size' }]);
    expect(body.created.tags.map((i: { key: string }) => i.key)).toEqual(['takeaway', 'regular_guest']);
    const kept = await db.selectFrom('tags').selectAll().where('id', '=', tag.json().id).executeTakeFirstOrThrow();
    expect(kept).toMatchObject({ name: 'RESERVATION', color: '#000000' });
    // The flow's add_tag points at the tag that was already there.
    const flow = body.created.flows.find((f: { key: string }) => f.key === 'reservation_request');
    const version = await db.selectFrom('automation_flow_versions').select('graph').where('flow_id', '=', flow.id).executeTakeFirstOrThrow();
    expect(JSON.stringify(version.graph)).toContain(tag.json().id);
  });

  it('another business account of the same workspace gets its own templates, flows and funnel; workspace-wide items are shared', async () => {
    const t = await tenant(app);
    const first = (await apply(app, t, { ...CLINIC, waba_id: t.wabaId })).json();
    const { createSandboxAccount } = await import('#server/providers/sandbox.js');
    const { account } = await createSandboxAccount(app.platform.store.db, t.workspaceId, { name: 'Second' });
    const res = await apply(app, t, { ...CLINIC, waba_id: account.id });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().created.templates).toHaveLength(2);
    expect(res.json().created.flows).toHaveLength(2);
    expect(res.json().created.funnels).toHaveLength(1);
    expect(res.json().already_present.tags).toEqual(first.created.tags);
  });

  it('templates are submitted to the provider as template create does (filled components), once: not again on the second apply', async () => {
    const t = await tenant(app);
    const provider = app.platform.provider('sandbox');
    const create = vi.spyOn(provider, 'createTemplate');
    const first = await apply(app, t, { slug: 'restaurant', waba_id: t.wabaId, variables: { company_name: 'Casa', city: 'Porto' } });
    expect(first.statusCode, first.body).toBe(200);
    expect(create).toHaveBeenCalledTimes(first.json().created.templates.length);
    const [ref, input] = create.mock.calls[0];
    const account = await app.platform.store.db.selectFrom('business_accounts').selectAll().where('id', '=', t.wabaId).executeTakeFirstOrThrow();
    expect(ref.wabaId).toBe(account.provider_waba_id);
    expect(input).toMatchObject({ language: 'en_US', allowCategoryChange: false });
    expect(JSON.stringify(input.components)).toContain('Porto');
    expect(JSON.stringify(input.components)).not.toContain('{{city}}');
    const stored = await app.platform.store.db
      .selectFrom('message_templates')
      .select(['name', 'provider_template_id', 'status'])
      .where('business_account_id', '=', t.wabaId)
      .execute();
    const answered = await Promise.all(create.mock.results.map((r) => r.value));
    expect(stored.map((r) => r.provider_template_id).sort()).toEqual(answered.map((a) => a.id).sort());
    create.mockClear();
    const again = await apply(app, t, { slug: 'restaurant', waba_id: t.wabaId, variables: { company_name: 'Casa', city: 'Porto' } });
    expect(again.statusCode).toBe(200);
    expect(create).not.toHaveBeenCalled();
  });

  it("a template the provider rejects at once is stored REJECTED with the provider's reason, like template create", async () => {
    const t = await tenant(app);
    const provider = app.platform.provider('sandbox');
    vi.spyOn(provider, 'createTemplate').mockImplementation(async (_ref, input) => ({ id: `rej_${input.name}`, status: 'REJECTED', category: input.category }));
    vi.spyOn(provider, 'getTemplateStatuses').mockImplementation(async (_ref, list) =>
      list.map((x) => ({
        id: x.id ?? 'x',
        name: x.name,
        language: x.language,
        status: 'REJECTED',
        category: x.category ?? 'UTILITY',
        rejectedReason: 'TAG_CONTENT_MISMATCH',
        qualityScore: null,
      })),
    );
    const res = await apply(app, t, { ...CLINIC, waba_id: t.wabaId });
    expect(res.statusCode, res.body).toBe(200);
    const row = await app.platform.store.db
      .selectFrom('message_templates')
      .selectAll()
      .where('id', '=', res.json().created.templates[0].id)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ status: 'REJECTED', rejected_reason: 'TAG_CONTENT_MISMATCH', provider_template_id: 'rej_appointment_reminder' });
  });

  it('one transaction: a failure after templates, tags, fields, quick replies and flows are written leaves none of them; the next apply adopts the submitted templates', async () => {
    const t = await tenant(app);
    const db = app.platform.store.db;
    // Funnels are written last: a trigger makes that insert fail, for this workspace only.
    await sql.raw(`create function pack_fail() returns trigger language plpgsql as $$ begin raise exception 'injected failure'; end $$`).execute(db);
    await sql
      .raw(`create trigger pack_fail before insert on kanban_funnels for each row when (new.workspace_id = '${t.workspaceId}') execute function pack_fail()`)
      .execute(db);
    const provider = app.platform.provider('sandbox');
    const create = vi.spyOn(provider, 'createTemplate');
    const before = await packCounts(app);
    try {
      const res = await apply(app, t, { ...CLINIC, waba_id: t.wabaId });
      expect(res.statusCode).toBe(500);
      expect(res.body).not.toContain('injected failure');
    } finally {
      await sql.raw('drop trigger pack_fail on kanban_funnels').execute(db);
      await sql.raw('drop function pack_fail()').execute(db);
    }
    expect(await packCounts(app)).toEqual(before);
    expect(create).toHaveBeenCalledTimes(2);
    const submitted = await Promise.all(create.mock.results.map((r) => r.value));

    // The provider holds them now: submitting again is refused as a duplicate, and they are adopted.
    create.mockRejectedValue(new ProviderError({ message: 'Duplicate template', code: 100, subcode: 2388023, httpStatus: 400 }));
    const res = await apply(app, t, { ...CLINIC, waba_id: t.wabaId });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().created.templates).toHaveLength(2);
    const rows = await db.selectFrom('message_templates').select('provider_template_id').where('business_account_id', '=', t.wabaId).execute();
    expect(rows.map((r) => r.provider_template_id).sort()).toEqual(submitted.map((s) => s.id).sort());
  });

  describe('refusals change nothing', () => {
    const refused = async (t: Tenant, body: Record<string, unknown>, status: number, type: string) => {
      const before = await packCounts(app);
      const res = await apply(app, t, body);
      expect(res.statusCode, res.body).toBe(status);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.json().type).toBe(`${PROBLEMS}${type}`);
      expect(await packCounts(app)).toEqual(before);
      return res.json();
    };

    it('H2 a required variable missing: 400 naming /body/variables/company_name', async () => {
      const p = await refused(a, { slug: 'dental-clinic', waba_id: a.wabaId, variables: { city: 'Lisbon' } }, 400, 'validation');
      expect(p.errors).toEqual([{ pointer: '/body/variables/company_name', detail: 'required by pack dental-clinic' }]);
    });

    it('H2 variables left out entirely: 400 naming every required one', async () => {
      const p = await refused(a, { slug: 'real-estate', waba_id: a.wabaId }, 400, 'validation');
      expect(p.errors.map((e: { pointer: string }) => e.pointer)).toEqual(['/body/variables/company_name', '/body/variables/city']);
    });

    it('H2 waba_id missing: 400 naming it', async () => {
      const p = await refused(a, { slug: 'dental-clinic', variables: CLINIC.variables }, 400, 'validation');
      expect(p.errors[0].pointer).toBe('/body/waba_id');
    });

    it('an unknown variable name: 400 naming it', async () => {
      const p = await refused(a, { ...CLINIC, waba_id: a.wabaId, variables: { ...CLINIC.variables, website: 'https://x.example' } }, 400, 'validation');
      expect(p.errors).toEqual([{ pointer: '/body/variables/website', detail: 'is not a variable of pack dental-clinic' }]);
    });

    it('a blank required value: 400', async () => {
      const p = await refused(a, { ...CLINIC, waba_id: a.wabaId, variables: { company_name: '   ', city: 'Lisbon' } }, 400, 'validation');
      expect(p.errors[0].pointer).toBe('/body/variables/company_name');
    });

    it('J7 a value holding {{1}}: 400 (it would become a template variable)', async () => {
      const p = await refused(a, { ...CLINIC, waba_id: a.wabaId, variables: { company_name: 'Smile {{1}}', city: 'Lisbon' } }, 400, 'validation');
      expect(p.errors[0].pointer).toBe('/body/variables/company_name');
    });

    it('a value that pushes a template over the provider limits (a 60-character header): 400 naming the variable', async () => {
      const p = await refused(a, { slug: 'real-estate', waba_id: a.wabaId, variables: { company_name: 'Atlantic', city: 'L'.repeat(80) } }, 400, 'validation');
      expect(p.detail).toContain('new_listing_alert');
      expect(p.errors).toEqual([{ pointer: '/body/variables/city', detail: 'makes template new_listing_alert invalid' }]);
    });

    it('H8 NUL in a value: 400', async () => {
      await refused(a, { ...CLINIC, waba_id: a.wabaId, variables: { company_name: 'Smile\u0000', city: 'Lisbon' } }, 400, 'validation');
    });

    it('H6 a value over 200 characters: 400 (maxLength)', async () => {
      await refused(a, { ...CLINIC, waba_id: a.wabaId, variables: { company_name: 'x'.repeat(201), city: 'Lisbon' } }, 400, 'validation');
    });

    it('H3 an unknown field: 400 naming it', async () => {
      const p = await refused(a, { ...CLINIC, waba_id: a.wabaId, isAdmin: true }, 400, 'validation');
      expect(p.errors[0].pointer).toBe('/body/isAdmin');
    });

    it('the provider refuses a template (and does not hold it): 502 provider-error, nothing created', async () => {
      const t = await tenant(app);
      const provider = app.platform.provider('sandbox');
      vi.spyOn(provider, 'createTemplate').mockRejectedValue(
        new ProviderError({ message: 'Invalid parameter', code: 100, httpStatus: 400, details: 'Invalid parameter' }),
      );
      vi.spyOn(provider, 'getTemplateStatuses').mockResolvedValue([]);
      const p = await refused(t, { ...CLINIC, waba_id: t.wabaId }, 502, 'provider-error');
      expect(p.detail).toContain('appointment_reminder');
      expect(p.detail).toContain('nothing was created');
    });

    it('the provider rate limits: 429 with Retry-After, nothing created', async () => {
      const t = await tenant(app);
      const provider = app.platform.provider('sandbox');
      vi.spyOn(provider, 'createTemplate').mockRejectedValue(new ProviderError({ message: 'Too many calls', code: 80008, httpStatus: 429, retryAfterSec: 30 }));
      vi.spyOn(provider, 'getTemplateStatuses').mockResolvedValue([]);
      await refused(t, { ...CLINIC, waba_id: t.wabaId }, 429, 'rate-limited');
    });

    it('unknown pack: 404', async () => {
      await refused(a, { ...CLINIC, slug: 'space-station', waba_id: a.wabaId }, 404, 'not-found');
    });

    it("B3 another workspace's business account: 404, the same body as an unknown one", async () => {
      const theirs = await refused(a, { ...CLINIC, waba_id: b.wabaId }, 404, 'not-found');
      const unknown = await refused(a, { ...CLINIC, waba_id: 'waba_0000000000000000' }, 404, 'not-found');
      expect(theirs.errors).toEqual(unknown.errors);
      expect(theirs.title).toBe(unknown.title);
    });

    it('A1 no credential: 401', async () => {
      const res = await app.inject({ method: 'POST', url: '/api/industry-packs/apply', payload: { ...CLINIC, waba_id: a.wabaId } });
      expect(res.statusCode).toBe(401);
      expect(res.headers['www-authenticate']).toContain('ApiKey realm="messaging"');
    });
  });
});
