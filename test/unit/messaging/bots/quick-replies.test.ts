// Quick replies: create and list (by shortcut, literal prefix search, signed cursor), the
// shortcut unique per workspace (409, also under concurrent creates), each refusal changing
// nothing, and another workspace's quick replies invisible.
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { PROBLEMS, tenant, type Tenant } from './support.js';

let app: FastifyInstance;
beforeAll(async () => {
  app = await buildShared();
}, 240_000);

const create = (t: Tenant, body: Record<string, unknown>) => app.inject({ method: 'POST', url: '/api/quick-replies', headers: t.headers, payload: body });
const list = (t: Tenant, query = '') => app.inject({ method: 'GET', url: `/api/quick-replies${query ? `?${query}` : ''}`, headers: t.headers });
const count = async (t: Tenant) =>
  Number(
    (
      await app.platform.store.db
        .selectFrom('quick_replies')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('workspace_id', '=', t.workspaceId)
        .executeTakeFirstOrThrow()
    ).n,
  );
const shortcuts = (res: { json(): { data: { shortcut: string }[] } }) => res.json().data.map((q) => q.shortcut);

async function refused(t: Tenant, body: Record<string, unknown>) {
  const res = await create(t, body);
  expect(res.statusCode, res.body).toBe(400);
  expect(res.json().type).toBe(`${PROBLEMS}validation`);
  expect(await count(t)).toBe(0);
}

describe('quick reply operations', () => {
  it('createQuickReply: 201 with its id; without a title, title is null', async () => {
    const t = await tenant(app);
    const res = await create(t, { shortcut: 'hours', title: 'Opening hours', text: 'We are open Mon-Fri 8:00-18:00.' });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ shortcut: 'hours', title: 'Opening hours', text: 'We are open Mon-Fri 8:00-18:00.' });
    expect(res.json().id).toMatch(/^qr_/);
    const bare = await create(t, { shortcut: 'thanks', text: 'Thank you, {{contact.name}}!' });
    expect(bare.json().title).toBeNull();
  });

  it('listQuickReplies: by shortcut, paged with a signed cursor', async () => {
    const t = await tenant(app);
    for (const shortcut of ['thanks', 'address', 'hours', 'hello']) await create(t, { shortcut, text: shortcut });
    const first = await list(t, 'limit=3');
    expect(shortcuts(first)).toEqual(['address', 'hello', 'hours']);
    expect(first.json().has_more).toBe(true);
    const second = await list(t, `limit=3&cursor=${first.json().next_cursor}`);
    expect(shortcuts(second)).toEqual(['thanks']);
    expect(second.json()).toMatchObject({ has_more: false, next_cursor: null });
  });

  it('search is a literal prefix: `_` and `%` mean themselves, case is ignored', async () => {
    const t = await tenant(app);
    for (const shortcut of ['ho_1', 'hours', 'house', 'shop']) await create(t, { shortcut, text: shortcut });
    expect(shortcuts(await list(t, 'search=hou'))).toEqual(['hours', 'house']);
    expect(shortcuts(await list(t, 'search=HOU'))).toEqual(['hours', 'house']);
    expect(shortcuts(await list(t, 'search=ho_'))).toEqual(['ho_1']);
    expect(shortcuts(await list(t, 'search=%25'))).toEqual([]);
  });

  it('a tampered cursor: 400', async () => {
    const t = await tenant(app);
    for (const shortcut of ['a1', 'b1']) await create(t, { shortcut, text: shortcut });
    const page = await list(t, 'limit=1');
    const res = await list(t, `limit=1&cursor=${page.json().next_cursor}x`);
    expect(res.statusCode).toBe(400);
  });
});

describe('quick reply refusals (one each, nothing stored)', () => {
  it('a shortcut already used in the workspace: 409 naming /body/shortcut', async () => {
    const t = await tenant(app);
    expect((await create(t, { shortcut: 'hours', text: 'One' })).statusCode).toBe(201);
    const res = await create(t, { shortcut: 'hours', text: 'Two' });
    expect(res.statusCode).toBe(409);
    expect(res.json()).toMatchObject({
      type: `${PROBLEMS}conflict`,
      detail: "A quick reply with the shortcut 'hours' already exists.",
      errors: [{ pointer: '/body/shortcut' }],
    });
    expect(await count(t)).toBe(1);
    expect(shortcuts(await list(t))).toEqual(['hours']);
    expect((await list(t)).json().data[0].text).toBe('One');
  });

  it('two concurrent creates of one shortcut: one 201, one 409', async () => {
    const t = await tenant(app);
    const answers = await Promise.all([create(t, { shortcut: 'race', text: 'A' }), create(t, { shortcut: 'race', text: 'B' })]);
    expect(answers.map((r) => r.statusCode).sort()).toEqual([201, 409]);
    expect(await count(t)).toBe(1);
  });

  it('an upper-case shortcut: 400', async () => refused(await tenant(app), { shortcut: 'Hours', text: 'x' }));
  it('a shortcut with the leading slash: 400', async () => refused(await tenant(app), { shortcut: '/hours', text: 'x' }));
  it('a shortcut longer than 32 characters: 400', async () => refused(await tenant(app), { shortcut: 'a'.repeat(33), text: 'x' }));
  it('an empty text: 400', async () => refused(await tenant(app), { shortcut: 'empty', text: '' }));
  it('no text: 400', async () => refused(await tenant(app), { shortcut: 'empty' }));
  it('an unknown property: 400', async () => refused(await tenant(app), { shortcut: 'hours', text: 'x', workspace_id: 'ws_other' }));
});

describe('another workspace (B2)', () => {
  it('its quick replies are not listed and its shortcuts do not conflict', async () => {
    const [t, other] = [await tenant(app), await tenant(app)];
    expect((await create(other, { shortcut: 'hours', text: 'Theirs' })).statusCode).toBe(201);
    expect(shortcuts(await list(t))).toEqual([]);
    expect((await create(t, { shortcut: 'hours', text: 'Ours' })).statusCode).toBe(201);
    expect((await list(t)).json().data.map((q: { text: string }) => q.text)).toEqual(['Ours']);
    expect((await list(other)).json().data.map((q: { text: string }) => q.text)).toEqual(['Theirs']);
  });
});
