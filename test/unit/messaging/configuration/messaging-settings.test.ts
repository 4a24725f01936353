// The workspace's Messaging settings: a locale (BCP 47, canonicalised, one the server supports)
// that automation reads `ask` answers in when the node names none, before the contact's country.
// Bad input is refused naming the field and changes nothing; a workspace's locale never reaches
// another workspace.
import type { FastifyInstance } from 'fastify';
import { beforeAll, expect, it } from 'vitest';
import { buildShared } from '#test/helper.js';
import { api, createFlow, executions, inboundText, outbound, until, workspace } from '../automation/support.js';

let app: FastifyInstance;
beforeAll(async () => {
  app = await buildShared();
});

const amountFlow = {
  triggers: [{ id: 'kw', type: 'keyword', parameters: { keywords: ['go'], match: 'exact' } }],
  nodes: [
    { id: 'amount', type: 'ask', parameters: { question: 'How much?', expect: 'number', save_as: 'amount', retry_text: 'Which do you mean?' } },
    { id: 'echo', type: 'send_text', parameters: { text: '{{vars.amount}}' } },
  ],
  connections: [
    { from_node: 'kw', to_node: 'amount' },
    { from_node: 'amount', from_port: 'reply', to_node: 'echo' },
  ],
};

it('defaults to no locale; a locale is canonicalised, kept when not given, and cleared with null', async () => {
  const w = await workspace(app);
  const call = api(app, w.key);
  const initial = await call('GET', '/api/messaging-settings');
  expect(initial.statusCode, initial.body).toBe(200);
  // The country defaults to the first number's (the sandbox's +1 555 test numbers are US).
  expect(initial.json()).toEqual({ locale: null, country: 'US', country_source: 'phone_number', updated_at: null });
  const set = await call('PUT', '/api/messaging-settings', { locale: 'pt-pt' });
  expect(set.statusCode, set.body).toBe(200);
  expect(set.json()).toMatchObject({ locale: 'pt-PT', updated_at: expect.any(String) });
  expect((await call('PUT', '/api/messaging-settings', {})).json()).toMatchObject({ locale: 'pt-PT' });
  expect((await call('GET', '/api/messaging-settings')).json()).toMatchObject({ locale: 'pt-PT' });
  expect((await call('PUT', '/api/messaging-settings', { locale: null })).json()).toMatchObject({ locale: null });
});

it.each([['pt_PT'], ['portuguese-x'], [''], ['en-'], ['zz-ZZ']])('locale %j: 422 naming /body/locale, nothing changed', async (locale) => {
  const w = await workspace(app);
  const call = api(app, w.key);
  await call('PUT', '/api/messaging-settings', { locale: 'de-DE' });
  const res = await call('PUT', '/api/messaging-settings', { locale });
  expect(res.statusCode, res.body).toBe(422);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.json().errors).toEqual([{ pointer: '/body/locale', detail: 'is not a BCP 47 locale' }]);
  expect((await call('GET', '/api/messaging-settings')).json()).toMatchObject({ locale: 'de-DE' });
});

it.each([[{ locale: 351 }], [{ locale: 'x'.repeat(65) }], [{ language: 'pt-PT' }]])('body %j: 400 naming the field', async (body) => {
  const w = await workspace(app);
  const res = await api(app, w.key)('PUT', '/api/messaging-settings', body);
  expect(res.statusCode, res.body).toBe(400);
  expect(JSON.stringify(res.json().errors)).toMatch(/\/body/);
  expect((await api(app, w.key)('GET', '/api/messaging-settings')).json()).toMatchObject({ locale: null, country: 'US', updated_at: null });
});

it('an answer "250.000" is 250000 for a workspace in pt-PT with no node locale; another workspace still reads en-US', async () => {
  const pt = await workspace(app);
  const other = await workspace(app);
  expect((await api(app, pt.key)('PUT', '/api/messaging-settings', { locale: 'pt-PT' })).statusCode).toBe(200);
  // A US contact: without the workspace's locale the answer would be read in en-US.
  const phone = '+14155559029';
  const flow = await createFlow(app, pt, amountFlow);
  const texts = async () => (await outbound(app, phone)).map((m) => (m.content as { text?: string }).text);
  await inboundText(app, pt, phone, 'go');
  await until(async () => (await texts()).length === 1, 10_000, 'the question');
  await inboundText(app, pt, phone, '250.000');
  await until(async () => (await executions(app, flow.id)).find((e) => e.status === 'completed'), 10_000, 'completion');
  // Read as 250000, and written back as pt-PT writes it.
  expect((await executions(app, flow.id)).find((e) => e.status === 'completed')).toBeTruthy();
  expect((await texts()).at(-1)).toBe('250\u00a0000');

  const dry = async (w: Awaited<ReturnType<typeof workspace>>) => {
    const f = await createFlow(app, w, amountFlow, { status: 'inactive', name: 'Amount dry' });
    const res = await api(app, w.key)('POST', `/api/automation/${f.id}/test`, {
      message: { type: 'text', text: 'go' },
      contact: { contact_no: '+14155559030' },
      replies: [{ type: 'text', text: '250.000' }],
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };
  const read = await dry(pt);
  expect(read.steps.map((x: { detail: string }) => x.detail).join('\n')).toMatch(/reply "250000"/);
  expect(read.messages.at(-1).preview).toBe('250\u00a0000');
  const english = await dry(other);
  expect(english).toMatchObject({ outcome: 'waiting', waiting_at: 'amount' });
  expect(english.steps.map((x: { detail: string }) => x.detail).join('\n')).toMatch(/reads two ways in en-US/);
  expect((await api(app, other.key)('GET', '/api/messaging-settings')).json()).toMatchObject({ locale: null, updated_at: null });
});

it('a country is upper-cased, kept when not given, cleared back to the first number’s with null; a bad one is 422 naming /body/country', async () => {
  const w = await workspace(app);
  const call = api(app, w.key);
  expect((await call('PUT', '/api/messaging-settings', { country: 'de' })).json()).toMatchObject({ country: 'DE', country_source: 'settings' });
  expect((await call('PUT', '/api/messaging-settings', { locale: 'de-DE' })).json()).toMatchObject({ locale: 'de-DE', country: 'DE' });
  for (const country of ['USA', 'XX', '', '1', 'D E']) {
    const res = await call('PUT', '/api/messaging-settings', { country });
    expect(res.statusCode, res.body).toBe(422);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.json().errors).toEqual([{ pointer: '/body/country', detail: 'is not an ISO 3166-1 alpha-2 country code' }]);
  }
  expect((await call('GET', '/api/messaging-settings')).json()).toMatchObject({ country: 'DE', country_source: 'settings' });
  expect((await call('PUT', '/api/messaging-settings', { country: null })).json()).toMatchObject({ country: 'US', country_source: 'phone_number' });
});
