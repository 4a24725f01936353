// Chatbots: create, list, get, train (append, replace, every refusal changing nothing), and the
// chatbot answering customers of the sandbox by similarity, with each fallback.
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { customerAsks, PROBLEMS, repliesTo, tenant, type Tenant } from './support.js';

let app: FastifyInstance;
beforeAll(async () => {
  app = await buildShared();
}, 240_000);

const PAIRS = [
  {
    question: 'What are your opening hours?',
    alternatives: ['When are you open?', 'Are you open on Saturday?'],
    answer: 'We are open Monday to Friday 8:00-18:00.',
  },
  { question: 'Do you accept insurance?', answer: 'Yes, we accept all major health insurers.' },
  { question: 'Where is the clinic?', alternatives: ['What is your address?'], answer: 'Main Street 1, Berlin.' },
];

const create = (t: Tenant, body: Record<string, unknown> = {}) =>
  app.inject({ method: 'POST', url: '/api/chatbots', headers: t.headers, payload: { name: 'Clinic FAQ', waba_id: t.wabaId, ...body } });
const train = (t: Tenant, id: string, body: Record<string, unknown>) =>
  app.inject({ method: 'POST', url: `/api/chatbots/${id}/train`, headers: t.headers, payload: body });
const get = (t: Tenant, id: string) => app.inject({ method: 'GET', url: `/api/chatbots/${id}`, headers: t.headers });

async function trainedBot(t: Tenant, body: Record<string, unknown> = {}) {
  const res = await create(t, body);
  expect(res.statusCode, res.body).toBe(201);
  const id = res.json().id as string;
  expect((await train(t, id, { pairs: PAIRS })).statusCode).toBe(200);
  return id;
}

describe('chatbot operations', () => {
  it('createChatbot: 201 with the defaults, untrained; listChatbots by our or the provider account id; getChatbot', async () => {
    const t = await tenant(app);
    const res = await create(t);
    expect(res.statusCode, res.body).toBe(201);
    const bot = res.json();
    expect(bot).toMatchObject({
      name: 'Clinic FAQ',
      waba_id: t.wabaId,
      phone_number_id: null,
      status: 'active',
      match_threshold: 0.6,
      fallback: { action: 'none' },
      qa_count: 0,
      trained_at: null,
    });
    expect(bot.id).toMatch(/^bot_/);
    const provider = await app.platform.store.db
      .selectFrom('business_accounts')
      .select('provider_waba_id')
      .where('id', '=', t.wabaId)
      .executeTakeFirstOrThrow();
    for (const ref of [t.wabaId, provider.provider_waba_id]) {
      const list = await app.inject({ method: 'GET', url: `/api/chatbots?waba_id=${ref}`, headers: t.headers });
      expect(list.statusCode).toBe(200);
      expect(list.json().data.map((b: { id: string }) => b.id)).toEqual([bot.id]);
    }
    const got = await get(t, bot.id);
    expect(got.statusCode).toBe(200);
    expect(got.json()).toMatchObject({ id: bot.id, qa_pairs: [] });
  });

  it('listChatbots pages newest first with a signed cursor', async () => {
    const t = await tenant(app);
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await create(t, { name: `Bot ${i}` })).json().id);
    const first = await app.inject({ method: 'GET', url: `/api/chatbots?waba_id=${t.wabaId}&limit=2`, headers: t.headers });
    expect(first.json().data.map((b: { id: string }) => b.id)).toEqual([ids[2], ids[1]]);
    const second = await app.inject({ method: 'GET', url: `/api/chatbots?waba_id=${t.wabaId}&limit=2&cursor=${first.json().next_cursor}`, headers: t.headers });
    expect(second.json()).toMatchObject({ has_more: false, next_cursor: null });
    expect(second.json().data.map((b: { id: string }) => b.id)).toEqual([ids[0]]);
  });

  it('createChatbot bound to one number of the account, with an agent fallback', async () => {
    const t = await tenant(app);
    const res = await create(t, { phone_number_id: t.pnId, fallback: { action: 'assign_agent', agent_id: t.ownerId } });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ phone_number_id: t.pnId, fallback: { action: 'assign_agent', agent_id: t.ownerId } });
  });

  it('trainChatbot append: adds, then a known question (any punctuation or case) gets the new answer', async () => {
    const t = await tenant(app);
    const id = (await create(t)).json().id;
    const first = await train(t, id, { pairs: PAIRS });
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json()).toMatchObject({ chatbot_id: id, mode: 'append', added: 3, updated: 0, removed: 0, total: 3 });
    const again = await train(t, id, { pairs: [{ question: 'do you ACCEPT insurance', answer: 'Only public insurers.' }, PAIRS[2]] });
    expect(again.json()).toMatchObject({ added: 0, updated: 1, total: 3 });
    const bot = (await get(t, id)).json();
    expect(bot.qa_count).toBe(3);
    expect(bot.trained_at).not.toBeNull();
    expect(bot.qa_pairs[1]).toEqual({ question: 'do you ACCEPT insurance', answer: 'Only public insurers.' });
  });

  it('trainChatbot replace: forgets every known pair', async () => {
    const t = await tenant(app);
    const id = (await create(t)).json().id;
    await train(t, id, { pairs: PAIRS });
    const res = await train(t, id, { mode: 'replace', pairs: [{ question: 'Do you have parking?', answer: 'Yes, behind the building.' }] });
    expect(res.json()).toMatchObject({ mode: 'replace', added: 1, removed: 3, total: 1 });
    expect((await get(t, id)).json().qa_pairs.map((p: { question: string }) => p.question)).toEqual(['Do you have parking?']);
  });
});

describe('chatbot bad inputs (each changes nothing)', () => {
  it('fallback reply without text: 400 naming /body/fallback/text', async () => {
    const t = await tenant(app);
    const res = await create(t, { fallback: { action: 'reply' } });
    expect(res.statusCode).toBe(400);
    expect(res.json().errors).toEqual([{ pointer: '/body/fallback/text', detail: 'required when fallback.action is reply' }]);
  });

  it('fallback text with another action: 400', async () => {
    const t = await tenant(app);
    const res = await create(t, { fallback: { action: 'none', text: 'Hi' } });
    expect(res.statusCode).toBe(400);
    expect(res.json().errors[0].pointer).toBe('/body/fallback/text');
  });

  it('match_threshold above 1: 400 from the contract', async () => {
    const t = await tenant(app);
    expect((await create(t, { match_threshold: 1.5 })).statusCode).toBe(400);
  });

  it("B2 another workspace's business account: 404, same as an unknown one", async () => {
    const [t, other] = [await tenant(app), await tenant(app)];
    const res = await create(t, { waba_id: other.wabaId });
    const unknown = await create(t, { waba_id: 'waba_0000000000000000' });
    expect(res.statusCode).toBe(404);
    expect(unknown.statusCode).toBe(404);
    expect(res.json().type).toBe(`${PROBLEMS}not-found`);
    expect((await app.inject({ method: 'GET', url: `/api/chatbots?waba_id=${other.wabaId}`, headers: t.headers })).statusCode).toBe(404);
  });

  it("B2 another workspace's number or agent: 404 naming the field", async () => {
    const [t, other] = [await tenant(app), await tenant(app)];
    const number = await create(t, { phone_number_id: other.pnId });
    expect(number.statusCode).toBe(404);
    expect(number.json().errors[0].pointer).toBe('/body/phone_number_id');
    const agent = await create(t, { fallback: { action: 'assign_agent', agent_id: other.ownerId } });
    expect(agent.statusCode).toBe(404);
    expect(agent.json().errors[0].pointer).toBe('/body/fallback/agent_id');
    expect(
      Number(
        (
          await app.platform.store.db
            .selectFrom('chatbots')
            .select((eb) => eb.fn.countAll().as('n'))
            .where('workspace_id', '=', t.workspaceId)
            .executeTakeFirstOrThrow()
        ).n,
      ),
    ).toBe(0);
  });

  it("B2 another workspace's chatbot: get and train answer 404", async () => {
    const [t, other] = [await tenant(app), await tenant(app)];
    const id = (await create(other)).json().id;
    expect((await get(t, id)).statusCode).toBe(404);
    expect((await train(t, id, { pairs: PAIRS })).statusCode).toBe(404);
    expect((await get(other, id)).json().qa_count).toBe(0);
  });

  it('training with a duplicate question: 422 naming the pair, nothing learnt', async () => {
    const t = await tenant(app);
    const id = (await create(t)).json().id;
    const res = await train(t, id, { pairs: [...PAIRS, { question: 'what are your opening hours', answer: 'Other' }] });
    expect(res.statusCode).toBe(422);
    expect(res.json().errors).toEqual([{ pointer: '/body/pairs/3/question', detail: 'repeats the question of pair 0 ("What are your opening hours?")' }]);
    expect((await get(t, id)).json()).toMatchObject({ qa_count: 0, trained_at: null });
  });

  it('training with a question of punctuation only: 422 naming it', async () => {
    const t = await tenant(app);
    const id = (await create(t)).json().id;
    const res = await train(t, id, { pairs: [{ question: '?!…', answer: 'x' }] });
    expect(res.statusCode).toBe(422);
    expect(res.json().errors[0].pointer).toBe('/body/pairs/0/question');
  });

  it('training with an empty answer or question: 400 from the contract', async () => {
    const t = await tenant(app);
    const id = (await create(t)).json().id;
    expect((await train(t, id, { pairs: [{ question: 'Hi there', answer: '' }] })).statusCode).toBe(400);
    expect((await train(t, id, { pairs: [] })).statusCode).toBe(400);
  });

  it('training past 1,000 pairs: 422, what it knew stays', async () => {
    const t = await tenant(app);
    const id = (await create(t)).json().id;
    const batch = (from: number) => Array.from({ length: 500 }, (_, i) => ({ question: `question number ${from + i}`, answer: `answer ${from + i}` }));
    expect((await train(t, id, { pairs: batch(0) })).statusCode).toBe(200);
    expect((await train(t, id, { pairs: batch(500) })).statusCode).toBe(200);
    const res = await train(t, id, { pairs: [{ question: 'one more question', answer: 'no' }] });
    expect(res.statusCode).toBe(422);
    expect(res.json().detail).toBe('The chatbot knows 1000 pairs; appending 1 would exceed the limit of 1000. Nothing was changed.');
    expect((await get(t, id)).json().qa_count).toBe(1000);
  }, 60_000);
});

describe('the chatbot answering in the sandbox', () => {
  it('answers trained questions, their other phrasings and typos', async () => {
    const t = await tenant(app);
    await trainedBot(t);
    const phone = '+4915112340001';
    for (const text of ['What are your opening hours?', 'when are you open', 'wen are you opn?', 'what is the address of the clinic']) {
      expect((await customerAsks(app, t, phone, text)).handledBy, text).toBe('chatbot');
    }
    expect(await repliesTo(app, t, phone)).toEqual([PAIRS[0]!.answer, PAIRS[0]!.answer, PAIRS[0]!.answer, PAIRS[2]!.answer]);
  });

  it('below the threshold: the fallback reply', async () => {
    const t = await tenant(app);
    await trainedBot(t, { fallback: { action: 'reply', text: 'Sorry {{contact.name}}, a colleague will answer soon.' } });
    const phone = '+4915112340002';
    expect((await customerAsks(app, t, phone, 'Can I bring my dog to the appointment?')).handledBy).toBe('chatbot');
    expect(await repliesTo(app, t, phone)).toEqual(['Sorry Lena, a colleague will answer soon.']);
  });

  it('below the threshold with assign_agent: the chat goes to the agent, nothing is sent', async () => {
    const t = await tenant(app);
    await trainedBot(t, { fallback: { action: 'assign_agent', agent_id: t.ownerId } });
    const phone = '+4915112340003';
    expect((await customerAsks(app, t, phone, 'I need to cancel my surgery')).handledBy).toBe('chatbot');
    const chat = await app.platform.store.db
      .selectFrom('chats')
      .innerJoin('contacts', 'contacts.id', 'chats.contact_id')
      .select('chats.assigned_owner_id')
      .where('contacts.phone', '=', phone)
      .executeTakeFirstOrThrow();
    expect(chat.assigned_owner_id).toBe(t.ownerId);
    expect(await repliesTo(app, t, phone)).toEqual([]);
  });

  it("assign_agent without agent_id: round robin over the workspace's agents", async () => {
    const t = await tenant(app);
    const db = app.platform.store.db;
    const second = {
      id: `usr_${'z'.repeat(20)}`,
      workspace_id: t.workspaceId,
      email: `${t.workspaceId.toLowerCase()}-2@example.test`,
      name: 'Agent 2',
      password_hash: 'x',
      created_at: new Date(),
    };
    await db.insertInto('owners').values(second).execute();
    await trainedBot(t, { fallback: { action: 'assign_agent' } });
    const assigned = [];
    for (const phone of ['+4915112340011', '+4915112340012', '+4915112340013']) {
      await customerAsks(app, t, phone, 'something entirely unrelated here');
      assigned.push(
        (
          await db
            .selectFrom('chats')
            .innerJoin('contacts', 'contacts.id', 'chats.contact_id')
            .select('chats.assigned_owner_id')
            .where('contacts.phone', '=', phone)
            .executeTakeFirstOrThrow()
        ).assigned_owner_id,
      );
    }
    expect(new Set(assigned)).toEqual(new Set([t.ownerId, second.id]));
    expect(assigned[0]).toBe(assigned[2]);
  });

  it('fallback none: the message is left for the inbox', async () => {
    const t = await tenant(app);
    await trainedBot(t);
    const phone = '+4915112340004';
    expect((await customerAsks(app, t, phone, 'Tell me a joke about penguins')).handledBy).toBeNull();
    expect(await repliesTo(app, t, phone)).toEqual([]);
  });

  it('untrained, inactive or bound to another number: silent', async () => {
    const t = await tenant(app);
    await create(t); // untrained
    const inactive = (await create(t, { status: 'inactive' })).json().id;
    await train(t, inactive, { pairs: PAIRS });
    const phone = '+4915112340005';
    expect((await customerAsks(app, t, phone, 'When are you open?')).handledBy).toBeNull();
    expect(await repliesTo(app, t, phone)).toEqual([]);
  });

  it('a threshold of 1 answers only an exact phrasing', async () => {
    const t = await tenant(app);
    await trainedBot(t, { match_threshold: 1 });
    const phone = '+4915112340006';
    expect((await customerAsks(app, t, phone, 'when are you open')).handledBy).toBe('chatbot');
    expect((await customerAsks(app, t, phone, 'wen are you opn')).handledBy).toBeNull();
  });

  it('retraining is used by the next message', async () => {
    const t = await tenant(app);
    const id = await trainedBot(t);
    const phone = '+4915112340007';
    await customerAsks(app, t, phone, 'Do you accept insurance?');
    await train(t, id, { pairs: [{ question: 'Do you accept insurance?', answer: 'Only public insurers.' }] });
    await customerAsks(app, t, phone, 'Do you accept insurance?');
    expect(await repliesTo(app, t, phone)).toEqual([PAIRS[1]!.answer, 'Only public insurers.']);
  });
});
