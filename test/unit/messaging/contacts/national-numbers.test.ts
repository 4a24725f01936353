// National numbers are read in the workspace's country (Messaging settings, else its first
// number's): `617 555 9008` in a US workspace is +16175559008, never +6175559008 (Australia).
// Only *valid* numbers are stored: a merely "possible" one (+10301234567) is refused naming the
// field, through the API and in a CSV row.
import type { FastifyInstance } from 'fastify';
import { beforeAll, expect, it } from 'vitest';
import { buildShared } from '#test/helper.js';
import { eventually } from '#test/support/eventually.js';
import { api, inboundText, workspace } from '../automation/support.js';
import { multipart } from '../media/support.js';
import { crmCounts, tenant, type Tenant } from './support.js';

let app: FastifyInstance;
let us: Tenant;
let de: Tenant;

beforeAll(async () => {
  app = await buildShared();
  [us, de] = [await tenant(app), await tenant(app)];
  expect((await us.call('PUT', '/api/messaging-settings', { country: 'US' })).status).toBe(200);
  expect((await de.call('PUT', '/api/messaging-settings', { country: 'DE' })).status).toBe(200);
}, 120_000);

async function importCsv(t: Tenant, csv: string) {
  const form = multipart({}, [{ filename: 'contacts.csv', type: 'text/csv', bytes: Buffer.from(csv) }]);
  const res = await app.inject({ method: 'POST', url: '/api/contacts/imports', headers: { 'x-api-key': t.key, ...form.headers }, payload: form.payload });
  expect(res.statusCode, res.body).toBe(202);
  return eventually(
    async () => {
      const job = (await t.call('GET', `/api/contacts/imports/${res.json().id}`)).body;
      return (job.status === 'completed' || job.status === 'failed') && job;
    },
    { within: 20_000, what: 'import finished', every: 50 },
  );
}

it('POST and PUT read national numbers in the workspace’s country', async () => {
  const created = await us.call('POST', '/api/contacts', { contact_no: '617 555 9008' });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  expect(created.body.contact_no).toBe('+16175559008');
  const renumbered = await us.call('PUT', `/api/contacts/${created.body.id}`, { contact_no: '(617) 555-9005' });
  expect(renumbered.status, JSON.stringify(renumbered.body)).toBe(200);
  expect(renumbered.body.contact_no).toBe('+16175559005');
  // Written with + and country code, a number is taken as written whatever the workspace.
  expect((await us.call('POST', '/api/contacts', { contact_no: '+49 30 1234567' })).body.contact_no).toBe('+49301234567');
  expect((await de.call('POST', '/api/contacts', { contact_no: '030 1234568' })).body.contact_no).toBe('+49301234568');
  expect((await de.call('POST', '/api/contacts', { contact_no: '0151 12345678' })).body.contact_no).toBe('+4915112345678');
});

it.each([
  ['030 1234567', 'US'], // a Berlin number read as American: +10301234567, valid nowhere
  ['+10301234567', 'US'],
  ['0123 45', 'DE'], // too short for any German number
  ['+61 7 5559008', 'US'], // possible in Australia, not valid
])('%j in a %s workspace: 400 naming /body/contact_no, nothing stored', async (number, country) => {
  const t = country === 'US' ? us : de;
  const before = await crmCounts(app);
  const res = await t.call('POST', '/api/contacts', { contact_no: number });
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body.errors).toEqual([{ pointer: '/body/contact_no', detail: expect.stringMatching(/^is not a valid phone number/) }]);
  expect(await crmCounts(app)).toEqual(before);
});

it('a CSV row is read in the workspace’s country; an invalid number fails the import naming the row and column', async () => {
  const job = await importCsv(us, 'contact_no,name\n(617) 555-9105,Ann\n617.555.9106,Bob\n');
  expect(job).toMatchObject({ status: 'completed', created: 2 });
  const listed = (await us.call('GET', '/api/contacts?q=%2B1617555910')).body.data.map((c: { contact_no: string }) => c.contact_no).sort();
  expect(listed).toEqual(['+16175559105', '+16175559106']);

  const before = await crmCounts(app);
  const bad = await importCsv(us, 'contact_no,name\n(617) 555-9107,Cy\n030 1234567,Di\n');
  expect(bad).toMatchObject({ status: 'failed', created: 0, error_count: 1 });
  expect(bad.errors).toEqual([{ line: 3, column: 'contact_no', detail: expect.stringMatching(/^is not a valid phone number in US/) }]);
  expect(await crmCounts(app)).toEqual(before);
});

it('without a country set, the workspace’s first number’s is used (the sandbox’s +1 555 test numbers are US)', async () => {
  const w = await workspace(app);
  const res = await api(app, w.key)('POST', '/api/contacts', { contact_no: '617 555 9208' });
  expect(res.statusCode, res.body).toBe(201);
  expect(res.json().contact_no).toBe('+16175559208');
});

it('sending to a national number reaches the customer of the workspace’s country; an invalid one is a 400', async () => {
  const w = await workspace(app);
  const call = api(app, w.key);
  const written = await inboundText(app, w, '+16175559408', 'hello');
  const send = (contact_no: string) => call('POST', '/api/chatapp/send', { contact_no, chatapp_phone_number: w.phone, messageType: 'text', message: 'Hi!' });
  const sent = await send('(617) 555-9408');
  expect(sent.statusCode, sent.body).toBeLessThan(300);
  expect(sent.json().contact_id).toBe(written.contactId);
  const refused = await send('030 1234567');
  expect(refused.statusCode, refused.body).toBe(400);
  expect(refused.json().errors).toEqual([{ pointer: '/body/contact_no', detail: expect.stringMatching(/^is not a valid phone number in US/) }]);
});
