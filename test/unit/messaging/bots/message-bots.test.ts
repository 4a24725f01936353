// Message bots: create and list, each refusal (one test each, nothing stored), keyword replies
// with their cooldown, and schedule replies once per period on a controlled clock.
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { addSandboxNumber } from '#server/providers/sandbox.js';
import { customerAsks, PROBLEMS, repliesTo, storeTemplate, tenant, type Tenant } from './support.js';

let app: FastifyInstance;
beforeAll(async () => {
  app = await buildShared();
}, 240_000);

const SCHEDULE = { timezone: 'Europe/Berlin', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '08:00', end: '18:00' }], reply_when: 'outside' };
const keywordBot = (t: Tenant, extra: Record<string, unknown> = {}) => ({
  name: 'Price list',
  waba_id: t.wabaId,
  kind: 'keyword',
  keywords: ['prices', 'price list'],
  match: 'contains',
  reply: { type: 'text', text: 'Here are our prices, {{contact.name}}.' },
  ...extra,
});
const create = (t: Tenant, body: Record<string, unknown>) => app.inject({ method: 'POST', url: '/api/message-bots', headers: t.headers, payload: body });
const count = async (t: Tenant) =>
  Number(
    (
      await app.platform.store.db
        .selectFrom('message_bots')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('workspace_id', '=', t.workspaceId)
        .executeTakeFirstOrThrow()
    ).n,
  );

async function refused(
  t: Tenant,
  body: Record<string, unknown>,
  status: number,
  pointer: string,
  type = status === 400 ? 'validation' : status === 404 ? 'not-found' : 'unprocessable',
) {
  const res = await create(t, body);
  expect(res.statusCode, res.body).toBe(status);
  expect(res.json().type).toBe(`${PROBLEMS}${type}`);
  expect(res.json().errors?.[0]?.pointer).toBe(pointer);
  expect(await count(t)).toBe(0);
}

describe('message bot operations', () => {
  it('createMessageBot keyword: 201; listMessageBots newest first', async () => {
    const t = await tenant(app);
    const res = await create(t, keywordBot(t));
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({
      kind: 'keyword',
      status: 'active',
      keywords: ['prices', 'price list'],
      match: 'contains',
      schedule: null,
      cooldown_minutes: 0,
      phone_number_id: null,
    });
    const second = await create(t, {
      name: 'Away',
      waba_id: t.wabaId,
      phone_number_id: t.pnId,
      kind: 'schedule',
      schedule: SCHEDULE,
      reply: { type: 'text', text: 'Closed' },
      cooldown_minutes: 720,
    });
    expect(second.statusCode, second.body).toBe(201);
    expect(second.json()).toMatchObject({ kind: 'schedule', keywords: [], match: null, schedule: SCHEDULE, phone_number_id: t.pnId });
    const list = await app.inject({ method: 'GET', url: `/api/message-bots?waba_id=${t.wabaId}&limit=1`, headers: t.headers });
    expect(list.json()).toMatchObject({ has_more: true, data: [{ id: second.json().id }] });
    const next = await app.inject({
      method: 'GET',
      url: `/api/message-bots?waba_id=${t.wabaId}&limit=1&cursor=${list.json().next_cursor}`,
      headers: t.headers,
    });
    expect(next.json()).toMatchObject({ has_more: false, data: [{ id: res.json().id }] });
  });

  it('createMessageBot with an approved template reply and with a media reply', async () => {
    const t = await tenant(app);
    const tpl = await storeTemplate(app, t, { name: 'welcome_back', components: [{ type: 'BODY', text: 'Welcome back!' }] });
    const res = await create(t, keywordBot(t, { reply: { type: 'template', template_id: tpl.id } }));
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().reply).toEqual({ type: 'template', template_id: tpl.id, language: 'en_US' });
    const media = await create(
      t,
      keywordBot(t, { reply: { type: 'media', media_type: 'document', media_url: 'https://example.com/prices.pdf', caption: 'Prices' } }),
    );
    expect(media.statusCode, media.body).toBe(201);
  });

  it("listMessageBots of another workspace's account: 404", async () => {
    const [t, other] = [await tenant(app), await tenant(app)];
    const res = await app.inject({ method: 'GET', url: `/api/message-bots?waba_id=${other.wabaId}`, headers: t.headers });
    expect(res.statusCode).toBe(404);
  });
});

describe('message bot bad inputs (one each, nothing stored)', () => {
  it('keyword bot without keywords: 400', async () => {
    const t = await tenant(app);
    const { keywords: _k, ...body } = keywordBot(t);
    await refused(t, body, 400, '/body/keywords');
  });
  it('schedule bot without schedule: 400', async () => {
    const t = await tenant(app);
    await refused(t, { name: 'Away', waba_id: t.wabaId, kind: 'schedule', reply: { type: 'text', text: 'Closed' } }, 400, '/body/schedule');
  });
  it('keyword bot with a schedule: 400', async () => {
    const t = await tenant(app);
    await refused(t, keywordBot(t, { schedule: SCHEDULE }), 400, '/body/schedule');
  });
  it("schedule bot with keywords or a match (the other kind's fields): 400", async () => {
    const t = await tenant(app);
    const away = { name: 'Away', waba_id: t.wabaId, kind: 'schedule', schedule: SCHEDULE, reply: { type: 'text', text: 'Closed' } };
    await refused(t, { ...away, keywords: ['hours'] }, 400, '/body/keywords');
    await refused(t, { ...away, match: 'contains' }, 400, '/body/match');
  });
  it('unknown IANA time zone: 400', async () => {
    const t = await tenant(app);
    await refused(
      t,
      { name: 'Away', waba_id: t.wabaId, kind: 'schedule', schedule: { ...SCHEDULE, timezone: 'Europe/Atlantis' }, reply: { type: 'text', text: 'Closed' } },
      400,
      '/body/schedule/timezone',
    );
  });
  it('a window ending when it starts: 400', async () => {
    const t = await tenant(app);
    await refused(
      t,
      {
        name: 'Away',
        waba_id: t.wabaId,
        kind: 'schedule',
        schedule: { ...SCHEDULE, windows: [{ days: ['mon'], start: '08:00', end: '08:00' }] },
        reply: { type: 'text', text: 'x' },
      },
      400,
      '/body/schedule/windows/0/end',
    );
  });
  it('a time that is no time of day: 400 from the contract', async () => {
    const t = await tenant(app);
    const res = await create(t, {
      name: 'Away',
      waba_id: t.wabaId,
      kind: 'schedule',
      schedule: { ...SCHEDULE, windows: [{ days: ['mon'], start: '24:00', end: '08:00' }] },
      reply: { type: 'text', text: 'x' },
    });
    expect(res.statusCode).toBe(400);
  });
  it('a keyword of punctuation only: 400', async () => {
    const t = await tenant(app);
    await refused(t, keywordBot(t, { keywords: ['?!'] }), 400, '/body/keywords/0');
  });
  it('text reply without text: 400', async () => {
    const t = await tenant(app);
    await refused(t, keywordBot(t, { reply: { type: 'text' } }), 400, '/body/reply/text');
  });
  it('template reply without template_id, media reply without media_url: 400 naming the field', async () => {
    const t = await tenant(app);
    await refused(t, keywordBot(t, { reply: { type: 'template', language: 'en_US' } }), 400, '/body/reply/template_id');
    await refused(t, keywordBot(t, { reply: { type: 'media', media_type: 'image' } }), 400, '/body/reply/media_url');
  });
  it('a reply field of another type: 400', async () => {
    const t = await tenant(app);
    await refused(t, keywordBot(t, { reply: { type: 'text', text: 'x', media_url: 'https://example.com/a.png' } }), 400, '/body/reply/media_url');
  });
  it('J3 media URL at a link-local address: 422 unsafe-url', async () => {
    const t = await tenant(app);
    await refused(
      t,
      keywordBot(t, { reply: { type: 'media', media_type: 'document', media_url: 'http://169.254.169.254/latest/meta-data/' } }),
      422,
      '/body/reply/media_url',
      'unsafe-url',
    );
  });
  it('unknown template: 404', async () => {
    const t = await tenant(app);
    await refused(t, keywordBot(t, { reply: { type: 'template', template_id: 'tpl_0000000000000000' } }), 404, '/body/reply/template_id');
  });
  it("B2 another workspace's template: 404", async () => {
    const [t, other] = [await tenant(app), await tenant(app)];
    const tpl = await storeTemplate(app, other, { name: 'welcome_back', components: [{ type: 'BODY', text: 'Hi' }] });
    await refused(t, keywordBot(t, { reply: { type: 'template', template_id: tpl.id } }), 404, '/body/reply/template_id');
  });
  it('template not approved: 422', async () => {
    const t = await tenant(app);
    const tpl = await storeTemplate(app, t, { name: 'in_review', status: 'PENDING', components: [{ type: 'BODY', text: 'Hi' }] });
    await refused(t, keywordBot(t, { reply: { type: 'template', template_id: tpl.id } }), 422, '/body/reply/template_id');
  });
  it('template with variables: 422 (a bot has no values for them)', async () => {
    const t = await tenant(app);
    const tpl = await storeTemplate(app, t, { name: 'hello_name', components: [{ type: 'BODY', text: 'Hi {{1}}', example: { body_text: [['Lena']] } }] });
    await refused(t, keywordBot(t, { reply: { type: 'template', template_id: tpl.id } }), 422, '/body/reply/template_id');
  });
  it("B2 another workspace's business account: 404", async () => {
    const [t, other] = [await tenant(app), await tenant(app)];
    await refused(t, keywordBot(t, { waba_id: other.wabaId }), 404, '/body/waba_id');
  });
  it("B2 another workspace's number: 404", async () => {
    const [t, other] = [await tenant(app), await tenant(app)];
    await refused(t, keywordBot(t, { phone_number_id: other.pnId }), 404, '/body/phone_number_id');
  });
  it('unknown field in the body: 400', async () => {
    const t = await tenant(app);
    expect((await create(t, keywordBot(t, { regex: '.*' }))).statusCode).toBe(400);
  });
});

describe('keyword bots replying in the sandbox', () => {
  it('replies to a matching text (placeholders filled), not to others; cooldown 0 replies every time', async () => {
    const t = await tenant(app);
    expect((await create(t, keywordBot(t))).statusCode).toBe(201);
    const phone = '+4915112350001';
    expect((await customerAsks(app, t, phone, 'Could you send the PRICE LIST?')).handledBy).toBe('message-bots.keyword');
    expect((await customerAsks(app, t, phone, 'priceless advice')).handledBy).not.toBe('message-bots.keyword');
    expect((await customerAsks(app, t, phone, 'prices')).handledBy).toBe('message-bots.keyword');
    expect(await repliesTo(app, t, phone)).toEqual(['Here are our prices, Lena.', 'Here are our prices, Lena.']);
  });

  it('cooldown: a second match inside it is handled silently', async () => {
    const t = await tenant(app);
    await create(t, keywordBot(t, { cooldown_minutes: 60 }));
    const phone = '+4915112350002';
    expect((await customerAsks(app, t, phone, 'prices')).handledBy).toBe('message-bots.keyword');
    expect((await customerAsks(app, t, phone, 'prices')).handledBy).toBe('message-bots.keyword');
    expect(await repliesTo(app, t, phone)).toEqual(['Here are our prices, Lena.']);
  });

  it('a bot bound to another number of the account, or inactive, stays silent', async () => {
    const t = await tenant(app);
    const account = await app.platform.store.db.selectFrom('business_accounts').selectAll().where('id', '=', t.wabaId).executeTakeFirstOrThrow();
    const second = await addSandboxNumber(app.platform.store.db, account);
    await create(t, keywordBot(t, { phone_number_id: second.id }));
    await create(t, keywordBot(t, { status: 'inactive' }));
    const phone = '+4915112350003';
    expect((await customerAsks(app, t, phone, 'prices')).handledBy).not.toBe('message-bots.keyword');
    expect(await repliesTo(app, t, phone)).toEqual([]);
  });

  it('a media reply goes out as the media message', async () => {
    const t = await tenant(app);
    await create(t, keywordBot(t, { reply: { type: 'media', media_type: 'document', media_url: 'https://example.com/prices.pdf', caption: 'Prices' } }));
    const phone = '+4915112350004';
    await customerAsks(app, t, phone, 'prices');
    expect(await repliesTo(app, t, phone)).toEqual(['https://example.com/prices.pdf']);
  });
});

describe('schedule bots on a controlled clock', () => {
  let clock = new Date('2026-11-23T18:30:00Z'); // Monday 19:30 in Berlin: closed
  let timed: FastifyInstance;
  beforeAll(async () => {
    timed = await buildShared({ overrides: { now: () => clock } });
  }, 240_000);

  it('answers once per closed period, not inside opening hours, again the next evening', async () => {
    const t = await tenant(timed);
    const res = await timed.inject({
      method: 'POST',
      url: '/api/message-bots',
      headers: t.headers,
      payload: {
        name: 'After hours',
        waba_id: t.wabaId,
        kind: 'schedule',
        schedule: SCHEDULE,
        reply: { type: 'text', text: 'We are closed and answer from 8:00.' },
      },
    });
    expect(res.statusCode, res.body).toBe(201);
    const phone = '+4915112360001';
    const ask = async (at: string, text: string) => {
      clock = new Date(at);
      return customerAsks(timed, t, phone, text, clock);
    };
    // The away notice does not consume the message: the chatbot may still answer it.
    expect((await ask('2026-11-23T18:30:00Z', 'Hello?')).handledBy).toBeNull(); // Mon 19:30
    await ask('2026-11-23T21:00:00Z', 'Anyone there?'); // Mon 22:00, same night
    await ask('2026-11-24T05:00:00Z', 'Good morning'); // Tue 06:00, same night
    await ask('2026-11-24T09:00:00Z', 'Open now?'); // Tue 10:00: open
    await ask('2026-11-24T17:30:00Z', 'Still there?'); // Tue 18:30: closed again
    expect(await repliesTo(timed, t, phone)).toEqual(['We are closed and answer from 8:00.', 'We are closed and answer from 8:00.']);
  });
});
