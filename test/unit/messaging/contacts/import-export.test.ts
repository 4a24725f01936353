// CSV import jobs and the streamed export: numbers normalised to E.164, rows of one number
// merged, existing contacts updated, all or nothing (a refused row writes nothing), the file's
// shape refused at once (not multipart, not UTF-8, broken quoting, unknown or missing columns,
// too large, too many rows), jobs of other workspaces unknown (B3), and an export that imports
// back unchanged with spreadsheet formulas neutralised.
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { csvCell, parseCsv, unguard } from '#server/apis/messaging/contacts/csv.js';
import { eventually } from '#test/support/eventually.js';
import { multipart } from '../media/support.js';
import { crmCounts, tenant, type Tenant } from './support.js';

let app: FastifyInstance;
let a: Tenant;
let b: Tenant;
const PROBLEM = 'https://chatapp.example/problems/';

beforeAll(async () => {
  app = await buildShared({ env: { RATE_LIMIT_IP_PER_MINUTE: '1000' } });
  [a, b] = [await tenant(app), await tenant(app)];
  for (const t of [a, b]) {
    await t.call('POST', '/api/custom-fields', { key: 'city', label: 'City', type: 'text' });
    await t.call('POST', '/api/custom-fields', { key: 'orders', label: 'Orders', type: 'number' });
  }
}, 120_000);

async function upload(t: Tenant, csv: string | Buffer, filename = 'contacts.csv') {
  const form = multipart({}, [{ filename, type: 'text/csv', bytes: Buffer.isBuffer(csv) ? csv : Buffer.from(csv) }]);
  const res = await app.inject({ method: 'POST', url: '/api/contacts/imports', headers: { 'x-api-key': t.key, ...form.headers }, payload: form.payload });
  return { status: res.statusCode, body: res.json() };
}

async function finished(t: Tenant, id: string) {
  return eventually(
    async () => {
      const job = (await t.call('GET', `/api/contacts/imports/${id}`)).body;
      return (job.status === 'completed' || job.status === 'failed') && job;
    },
    { within: 20_000, what: 'import finished', every: 50 },
  );
}

const byPhone = async (t: Tenant, phone: string) => (await t.call('GET', `/api/contacts?q=${encodeURIComponent(phone)}`)).body.data[0];

describe('CSV', () => {
  it('reads RFC 4180 quoting and refuses broken files naming the line; formulas are guarded both ways', () => {
    expect(parseCsv('a,b\r\n"x, ""y""","multi\nline"\n\n1,2', 10).map((r) => [r.line, r.cells])).toEqual([
      [1, ['a', 'b']],
      [2, ['x, "y"', 'multi\nline']],
      [5, ['1', '2']],
    ]);
    expect(() => parseCsv('a\n"open', 10)).toThrow(/line 2: a quoted field is not closed/);
    expect(() => parseCsv('a\nx"y', 10)).toThrow(/line 2: a quote inside an unquoted field/);
    expect(() => parseCsv('a\n"x"y', 10)).toThrow(/line 2: text after a closing quote/);
    expect(() => parseCsv('a\n1\n2\n3', 2)).toThrow(/more than 2 rows/);
    expect(csvCell('=HYPERLINK("x")')).toBe(`"'=HYPERLINK(""x"")"`);
    expect(csvCell('-5')).toBe("'-5");
    expect(unguard("'=1+1")).toBe('=1+1');
    expect(unguard("'quoted")).toBe("'quoted");
  });
});

describe('createContactImport', () => {
  it('imports: E.164, rows of one number merged, an existing contact updated, tags, custom fields, opt-out', async () => {
    const existing = await a.call('POST', '/api/contacts', { contact_no: '+4915190000001', name: 'Old name', email: 'old@example.com', tags: ['old'] });
    const csv = [
      'contact_no,name,email,tags,opted_out,city,orders',
      '+49 151 9000 0001,Lena Fischer,,"vip,news",,Berlin,3',
      '4915190000002,Ben,ben@example.com,vip,false,,',
      '+49-151-9000-0002,,,"news",,Hamburg,',
      '"+4915190000003","Cem, Jr.",,,true,"Köln",1.5',
    ].join('\r\n');
    const accepted = await upload(a, csv);
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(202);
    expect(accepted.body).toMatchObject({ status: 'validating', filename: 'contacts.csv', total_rows: 4, errors: [] });
    const job = await finished(a, accepted.body.id);
    expect(job).toMatchObject({ status: 'completed', total_rows: 4, processed_rows: 4, created: 2, updated: 1, merged: 1, error_count: 0 });
    expect(job.finished_at).not.toBeNull();

    const lena = await byPhone(a, '+4915190000001');
    expect(lena).toMatchObject({
      id: existing.body.id,
      name: 'Lena Fischer',
      email: 'old@example.com',
      custom_fields: { city: 'Berlin', orders: 3 },
      opted_out: false,
    });
    expect(lena.tags).toEqual(['news', 'old', 'vip']);
    expect(await byPhone(a, '+4915190000002')).toMatchObject({
      name: 'Ben',
      email: 'ben@example.com',
      tags: ['news', 'vip'],
      custom_fields: { city: 'Hamburg' },
    });
    expect(await byPhone(a, '+4915190000003')).toMatchObject({
      name: 'Cem, Jr.',
      custom_fields: { city: 'Köln', orders: 1.5 },
      opted_out: true,
      opt_out_source: 'import',
    });
    // B3: another workspace neither sees the job nor got the contacts.
    expect((await b.call('GET', `/api/contacts/imports/${accepted.body.id}`)).status).toBe(404);
    expect(await byPhone(b, '+4915190000002')).toBeUndefined();
  });

  it('a file with refused rows writes nothing and names each row, column and reason', async () => {
    const before = await crmCounts(app);
    const csv = [
      'contact_no,name,email,tags,city,orders',
      '+4915190000101,Ok,,,,',
      '12345,Bad number,,,,',
      '+4915190000102,,not-an-email,,,',
      '+4915190000103,,,"bad\u0001tag",,',
      '+4915190000104,,,,,many',
      '+4915190000105,too,few',
      ',,,,,',
    ].join('\n');
    const accepted = await upload(a, csv);
    expect(accepted.status).toBe(202);
    const job = await finished(a, accepted.body.id);
    expect(job).toMatchObject({ status: 'failed', error_count: 6, created: 0, updated: 0 });
    expect(job.errors.map((e: { line: number; column: string | null }) => [e.line, e.column])).toEqual([
      [3, 'contact_no'],
      [4, 'email'],
      [5, 'tags'],
      [6, 'orders'],
      [7, null],
      [8, 'contact_no'],
    ]);
    expect(await crmCounts(app)).toEqual(before);
    expect(await byPhone(a, '+4915190000101')).toBeUndefined();
  });

  it('refuses a bad file at once, changing nothing: not multipart, not UTF-8, broken quoting, columns, size', async () => {
    const before = await crmCounts(app);
    const jobs = async () =>
      Number(
        (
          await app.platform.store.db
            .selectFrom('contact_imports')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    const jobsBefore = await jobs();
    const json = await a.call('POST', '/api/contacts/imports', { file: 'contact_no\n+4915190000201' });
    expect(json.status).toBe(415);
    const cases: [string | Buffer, number, RegExp][] = [
      [Buffer.from('contact_no,name\n+4915190000201,J\xfcrgen\n', 'latin1'), 400, /UTF-8/],
      ['contact_no,name\n+4915190000201,"open\n', 400, /line 2/],
      ['contact_no,shoe_size\n+4915190000201,42\n', 400, /shoe_size/],
      ['name,email\nLena,l@example.com\n', 400, /contact_no/],
      ['contact_no,name,NAME\n+4915190000201,a,b\n', 400, /twice/],
      ['', 400, /empty/],
      ['contact_no\n+4915190000201\u0000\n', 400, /NUL/],
      [`contact_no\n${'+4915190000201\n'.repeat(200_001)}`, 413, /200000 rows/],
      [Buffer.alloc(21 * 1024 * 1024, 'a'), 413, /20 MB/],
    ];
    for (const [csv, status, detail] of cases) {
      const res = await upload(a, csv);
      expect(res.status, String(csv).slice(0, 40)).toBe(status);
      expect(res.body.detail).toMatch(detail);
      expect(res.body.type).toBe(`${PROBLEM}${status === 413 ? 'payload-too-large' : 'validation'}`);
    }
    const noFile = multipart({ note: 'x' });
    const res = await app.inject({ method: 'POST', url: '/api/contacts/imports', headers: { 'x-api-key': a.key, ...noFile.headers }, payload: noFile.payload });
    expect(res.statusCode).toBe(400);
    expect(await crmCounts(app)).toEqual(before);
    expect(await jobs()).toBe(jobsBefore);
  });
});

describe('exportContacts', () => {
  it('streams every contact as CSV that imports back unchanged; formulas neutralised; only the workspace', async () => {
    const c = await tenant(app);
    await c.call('POST', '/api/custom-fields', { key: 'city', label: 'City', type: 'text' });
    await c.call('POST', '/api/contacts', {
      contact_no: '+4915190000301',
      name: '=HYPERLINK("http://evil")',
      tags: ['vip', 'b2b'],
      custom_fields: { city: 'Porto' },
    });
    await c.call('POST', '/api/contacts', { contact_no: '+4915190000302', name: 'Ana "A" Lima', email: 'ana@example.com' });
    await c.call('PUT', `/api/contacts/${(await byPhone(c, '+4915190000302')).id}`, { opted_out: true });
    const res = await app.inject({ method: 'GET', url: '/api/contacts/export', headers: { 'x-api-key': c.key } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/csv/);
    const lines = res.body.trimEnd().split('\r\n');
    expect(lines).toEqual([
      'contact_no,name,email,tags,opted_out,city',
      `+4915190000301,"'=HYPERLINK(""http://evil"")",,"b2b,vip",false,Porto`,
      '+4915190000302,"Ana ""A"" Lima",ana@example.com,,true,',
    ]);

    const d = await tenant(app);
    await d.call('POST', '/api/custom-fields', { key: 'city', label: 'City', type: 'text' });
    const accepted = await upload(d, res.body);
    expect(accepted.status).toBe(202);
    expect(await finished(d, accepted.body.id)).toMatchObject({ status: 'completed', created: 2 });
    const strip = ({ contact_no, name, email, tags, custom_fields, opted_out }: Record<string, unknown>) => ({
      contact_no,
      name,
      email,
      tags,
      custom_fields,
      opted_out,
    });
    for (const phone of ['+4915190000301', '+4915190000302']) expect(strip(await byPhone(d, phone))).toEqual(strip(await byPhone(c, phone)));
  });

  it('every value comes back exactly: quotes of its own, guard-like prefixes, formulas, separators', async () => {
    // Values that trip a CSV round trip: a leading apostrophe before a formula character (read
    // back as a guard and lost, once), apostrophes alone, quotes, commas, line breaks, spaces.
    const names = [
      "'=SUM(A1:A9)",
      "'tis the season",
      "'",
      "''",
      "'+49",
      '"Quoted" name',
      '=1+1',
      '+plus',
      '-minus',
      '@handle',
      'a, b',
      'two\nlines',
      '  spaced  ',
      'Zoë 🌻',
    ];
    const c = await tenant(app);
    await c.call('POST', '/api/custom-fields', { key: 'city', label: 'City', type: 'text' });
    for (const [i, name] of names.entries()) {
      const res = await c.call('POST', '/api/contacts', { contact_no: `+49151903${String(i).padStart(5, '0')}`, name, custom_fields: { city: name } });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
    }
    const exported = await app.inject({ method: 'GET', url: '/api/contacts/export', headers: { 'x-api-key': c.key } });
    const d = await tenant(app);
    await d.call('POST', '/api/custom-fields', { key: 'city', label: 'City', type: 'text' });
    const accepted = await upload(d, exported.body);
    expect(await finished(d, accepted.body.id)).toMatchObject({ status: 'completed', created: names.length });
    for (const [i, name] of names.entries()) {
      const back = await byPhone(d, `+49151903${String(i).padStart(5, '0')}`);
      expect({ name: back.name, city: back.custom_fields.city }, JSON.stringify(name)).toEqual({ name, city: name });
    }
    // Hand-written files keep working: an apostrophe before a plain letter is the value's.
    expect(unguard("'tis")).toBe("'tis");
    expect(unguard("''tis")).toBe("'tis");
    expect(csvCell("'=x")).toBe("''=x");
  });

  it('writes each cell as csvCell does, from the database: awkward values, numbers, tags, empty cells; a COPY or pages alike', async () => {
    // The lines are built in SQL (COPY on PostgreSQL, keyset pages on PGlite or past the COPYs
    // an instance runs at once): each must be what the JavaScript writer makes of the same contact.
    const c = await tenant(app);
    await c.call('POST', '/api/custom-fields', { key: 'city', label: 'City', type: 'text' });
    await c.call('POST', '/api/custom-fields', { key: 'orders', label: 'Orders', type: 'number' });
    const texts = [
      '=1+1',
      '-minus',
      '+plus',
      '@handle',
      '\ttab first',
      "'tis",
      'say "hi", then\r\nleave',
      ' leading space',
      'trailing\u3000',
      '\u00a0nbsp',
      'Zoë 🌻 Ωμέγα',
      'שלום',
      'plain',
      'tail tab\t',
      '\rcr first',
      '"',
      'line\nbreak',
      '\u2000en quad\u2000',
    ];
    const numbers = [12, -3, 0, 1.5, 0.1 + 0.2, 1e21, -2.5e25, 1.5e-7, 1e-6, 123456789012345680000];
    const tagSets = [['Zeta', 'alpha', 'Äpfel'], ['éclair', 'Eagle', '=sum'], ['-vip'], [], ['b2b', 'B2C', 'vip']];
    for (const [i, text] of texts.entries()) {
      const res = await c.call('POST', '/api/contacts', {
        contact_no: `+49151904${String(i).padStart(5, '0')}`,
        ...(i % 4 === 3 ? {} : { name: text }),
        ...(i % 3 === 0 ? { email: `p${i}@example.com` } : {}),
        tags: tagSets[i % tagSets.length],
        custom_fields: { ...(i % 5 === 4 ? {} : { city: texts[(i + 3) % texts.length] }), ...(i < numbers.length ? { orders: numbers[i] } : {}) },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
    }
    await c.call('PUT', `/api/contacts/${(await byPhone(c, '+4915190400002')).id}`, { opted_out: true });
    const contacts = (await c.call('GET', '/api/contacts?limit=100')).body.data as Record<string, any>[];
    const reference = (k: Record<string, any>) =>
      [
        csvCell(k.contact_no, false),
        csvCell(k.name ?? ''),
        csvCell(k.email ?? ''),
        csvCell([...k.tags].sort((a: string, b: string) => a.localeCompare(b)).join(',')),
        k.opted_out ? 'true' : 'false',
        ...['city', 'orders'].map((f) => (k.custom_fields[f] === undefined || k.custom_fields[f] === null ? '' : csvCell(String(k.custom_fields[f])))),
      ].join(',');
    const expected = ['contact_no,name,email,tags,opted_out,city,orders', ...contacts.map(reference).sort()];
    // Four at once: on PostgreSQL the fourth is past the COPYs an instance runs and reads pages.
    const bodies = await Promise.all(
      Array.from({ length: 4 }, () => app.inject({ method: 'GET', url: '/api/contacts/export', headers: { 'x-api-key': c.key } })),
    );
    for (const res of bodies) {
      expect(res.statusCode).toBe(200);
      expect(res.body.endsWith('\r\n')).toBe(true);
      // Lines are split on CRLF outside quotes: a value's own CRLF is inside a quoted cell.
      const lines = res.body.slice(0, -2).split(/\r\n(?=\+|contact_no)/);
      expect([lines[0], ...lines.slice(1).sort()]).toEqual(expected);
      expect(res.body).toBe(bodies[0]!.body);
    }
    expect(bodies[0]!.body).toContain(`,'-vip,true,`);
    expect(bodies[0]!.body).toContain(',1e+21\r\n');
    expect(bodies[0]!.body).toContain(`,'-2.5e+25\r\n`);
    expect(bodies[0]!.body).toContain(',1.5e-7\r\n');
  });

  it('pages through more contacts than one page, oldest first', async () => {
    const e = await tenant(app);
    const db = app.platform.store.db;
    const base = Date.now() - 10_000_000;
    await db
      .insertInto('contacts')
      .values(
        Array.from({ length: 2500 }, (_, i) => ({
          id: `ct_export${String(i).padStart(5, '0')}`,
          workspace_id: e.workspaceId,
          phone: `+4915191${String(i).padStart(6, '0')}`,
          created_at: new Date(base + i),
        })),
      )
      .execute();
    const res = await app.inject({ method: 'GET', url: '/api/contacts/export', headers: { 'x-api-key': e.key } });
    const phones = res.body
      .trimEnd()
      .split('\r\n')
      .slice(1)
      .map((l) => l.split(',')[0]);
    expect(phones).toHaveLength(2500);
    expect(phones[0]).toBe('+4915191000000');
    expect(phones[2499]).toBe('+4915191002499');
  });
});
