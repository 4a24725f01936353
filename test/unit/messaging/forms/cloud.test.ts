// Forms against the fake Cloud API: the Graph calls Meta receives (create the Flow, upload its
// Flow JSON as an asset, publish), and Meta's failures at each step: nothing stored on a refused
// create (and no draft left at the provider), a publish refusal leaving the form a draft.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { FAKE_TOKEN, FAKE_WABA_ID, FakeProvider } from '#test/fakes/fake-provider.js';
import { validateFlowJson } from '#server/providers/flow-json-check.js';
import { cloudTenant, createForm, formBody, formCount, listForms, PROBLEMS, publishForm, withFields, type Tenant } from './support.js';

let fake: FakeProvider;
let app: FastifyInstance;
let t: Tenant;
let n = 0;
const body = (extra: Record<string, unknown> = {}) => formBody(t, { name: `Appointment request ${++n}`, ...extra });
const graphError = (status: number, code: number, message: string) => ({
  status,
  body: { error: { message, type: 'OAuthException', code, fbtrace_id: 'Afake' } },
});

beforeAll(async () => {
  fake = await new FakeProvider().start();
  // The provider's timeout shortened from 15 s: the hanging-provider tests wait it out.
  app = await buildShared({ env: { GRAPH_API_URL: fake.baseUrl }, overrides: { timeouts: { providerMs: 1_500 } } });
  t = await withFields(app, await cloudTenant(app));
}, 240_000);
afterAll(() => fake.stop());
beforeEach(() => fake.reset());

const formStatus = async (id: string) =>
  (await listForms(app, t, `waba_id=${t.wabaId}&limit=100`)).json().data.find((f: { id: string }) => f.id === id).flow.status;

describe('createForm on the Cloud API', () => {
  it("POST /{waba-id}/flows with name and categories, then the Flow JSON as a FLOW_JSON asset; flow_id is Meta's id", async () => {
    const req = body();
    const res = await createForm(app, t, req);
    expect(res.statusCode, res.body).toBe(201);
    const form = res.json();
    const [create, asset, ...rest] = fake.requests;
    expect(rest).toEqual([]);
    expect(create).toMatchObject({ method: 'POST', path: `/${FAKE_WABA_ID}/flows`, body: { name: req.name, categories: ['APPOINTMENT_BOOKING'] } });
    expect(create!.headers.authorization).toBe(`Bearer ${FAKE_TOKEN}`);
    expect(asset).toMatchObject({
      method: 'POST',
      path: `/${form.flow.flow_id}/assets`,
      body: { name: 'flow.json', asset_type: 'FLOW_JSON', file: { filename: 'flow.json', type: 'application/json' } },
    });
    const flow = fake.flows.get(form.flow.flow_id)!;
    expect(flow).toMatchObject({ name: req.name, status: 'DRAFT' });
    expect(validateFlowJson(flow.flowJson!)).toEqual([]);
    // The completion payload carries every answer and the form id (how a submission finds its form).
    const json = JSON.parse(flow.flowJson!);
    const footer = json.screens.at(-1).layout.children[0].children.at(-1);
    expect(footer).toMatchObject({
      type: 'Footer',
      label: 'Send request',
      'on-click-action': { name: 'complete', payload: { form_id: form.id, full_name: '${form.full_name}', people: '${form.people}' } },
    });
  });

  it('the provider refusing the Flow (code 100): 502 provider-error, nothing stored', async () => {
    const before = await formCount(app, t);
    fake.fail(graphError(400, 100, '(#100) Invalid parameter'), { method: 'POST', path: /\/flows$/ });
    const res = await createForm(app, t, body());
    expect(res.statusCode, res.body).toBe(502);
    expect(res.json()).toMatchObject({ type: `${PROBLEMS}provider-error`, provider_code: 100 });
    expect(await formCount(app, t)).toBe(before);
  });

  it('the provider refusing the Flow JSON (validation_errors): 502, nothing stored, the draft deleted at the provider', async () => {
    const before = await formCount(app, t);
    const flowsBefore = fake.flows.size;
    fake.fail(
      { status: 200, body: { success: true, validation_errors: [{ error: 'INVALID_PROPERTY_VALUE', message: 'Invalid label', path: 'screens[0].layout' }] } },
      { path: /\/assets$/ },
    );
    const res = await createForm(app, t, body());
    expect(res.statusCode, res.body).toBe(502);
    expect(res.json()).toMatchObject({ type: `${PROBLEMS}provider-error`, provider_code: 139001 });
    expect(res.json().detail).toContain('screens[0].layout: Invalid label');
    expect(fake.requests.map((r) => r.method)).toEqual(['POST', 'POST', 'DELETE']);
    expect(fake.flows.size).toBe(flowsBefore);
    expect(await formCount(app, t)).toBe(before);
  });

  it('rate limited: 429 with Retry-After, nothing stored', async () => {
    const before = await formCount(app, t);
    fake.fail('rate-limit', { path: /\/flows$/, retryAfterSec: 45, times: 10 });
    const res = await createForm(app, t, body());
    expect(res.statusCode, res.body).toBe(429);
    expect(res.headers['retry-after']).toBe('45');
    expect(await formCount(app, t)).toBe(before);
  });

  it('the stored token refused (190): 502 saying to connect the account again, nothing stored', async () => {
    const before = await formCount(app, t);
    fake.fail('auth', { path: /\/flows$/, times: 10 });
    const res = await createForm(app, t, body());
    expect(res.statusCode, res.body).toBe(502);
    expect(res.json()).toMatchObject({ type: `${PROBLEMS}provider-error`, provider_code: 190 });
    expect(res.json().detail).toMatch(/connect the account again/);
    expect(await formCount(app, t)).toBe(before);
  });

  it('the provider never answering the create: 502 saying a draft may remain, nothing stored', async () => {
    const before = await formCount(app, t);
    fake.fail('hang', { path: /\/flows$/ });
    const res = await createForm(app, t, body());
    expect(res.statusCode, res.body).toBe(502);
    expect(res.json()).toMatchObject({
      type: `${PROBLEMS}provider-error`,
      detail: 'The chat provider did not answer in time. Nothing was stored; a draft Flow may remain at the provider.',
    });
    // Creating is not retried once sent: the provider saw it once.
    expect(fake.requests.filter((r) => r.path.endsWith('/flows'))).toHaveLength(1);
    expect(await formCount(app, t)).toBe(before);
  }, 60_000);
});

describe('publishForm on the Cloud API', () => {
  async function draft() {
    const res = await createForm(app, t, body());
    expect(res.statusCode, res.body).toBe(201);
    fake.reset();
    return res.json() as { id: string; flow: { flow_id: string } };
  }

  it('POST /{flow-id}/publish; the Flow and the form are PUBLISHED', async () => {
    const form = await draft();
    const res = await publishForm(app, t, form.id);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().flow).toEqual({ flow_id: form.flow.flow_id, status: 'PUBLISHED' });
    expect(fake.requests.map((r) => `${r.method} ${r.path}`)).toEqual([`POST /${form.flow.flow_id}/publish`]);
    expect(fake.flows.get(form.flow.flow_id)!.status).toBe('PUBLISHED');
  });

  it('the provider finding errors in the Flow (139001): 422 with provider_code, still a draft', async () => {
    const form = await draft();
    fake.fail(graphError(400, 139001, 'Publishing failed'), { path: /\/publish$/ });
    const res = await publishForm(app, t, form.id);
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json()).toMatchObject({ type: `${PROBLEMS}unprocessable`, provider_code: 139001 });
    expect(await formStatus(form.id)).toBe('DRAFT');
  });

  it('already published at the provider (139002): 409', async () => {
    const form = await draft();
    fake.flows.get(form.flow.flow_id)!.status = 'PUBLISHED';
    const res = await publishForm(app, t, form.id);
    expect(res.statusCode, res.body).toBe(409);
    expect(res.json().type).toBe(`${PROBLEMS}conflict`);
  });

  it('the provider failing (5xx, after retries): 502, still a draft, publishable later', async () => {
    const form = await draft();
    fake.fail('server-error', { path: /\/publish$/, times: 10 });
    const res = await publishForm(app, t, form.id);
    expect(res.statusCode, res.body).toBe(502);
    expect(res.json()).toMatchObject({ type: `${PROBLEMS}provider-error`, detail: 'The chat provider failed to publish the Flow; the form is still a draft.' });
    expect(await formStatus(form.id)).toBe('DRAFT');
    fake.reset();
    expect((await publishForm(app, t, form.id)).statusCode).toBe(200);
  });

  it('rate limited: 429 with Retry-After, still a draft', async () => {
    const form = await draft();
    fake.fail('rate-limit', { path: /\/publish$/, retryAfterSec: 30, times: 10 });
    const res = await publishForm(app, t, form.id);
    expect(res.statusCode, res.body).toBe(429);
    expect(res.headers['retry-after']).toBe('30');
    expect(await formStatus(form.id)).toBe('DRAFT');
  });
});
