// The sandbox phone plays the customer of interactive messages: it taps a reply button, picks a
// list row and fills in and submits a form (a Flow) the business sent, each arriving as the
// provider's payload (button_reply, list_reply with its description, nfm_reply with the Flow's
// token), quoting the message answered; a flow waiting on them goes on. Bad taps change nothing.
// It also shows what the business did: blue ticks after markChatRead, typing until the reply.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import type { SandboxProvider } from '#server/providers/sandbox.js';
import { buildShared } from '#test/helper.js';
import { createFlow, executions, outbound, until, workspace, type Workspace } from './automation/support.js';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
let app: FastifyInstance;
let w: Workspace;
let flowId: string;
/** Every message the sandbox phone handed to the provider's inbound path. */
const posted: Parameters<SandboxProvider['simulateInbound']>[0][] = [];
const FLOW_ID = `77${Date.now()}`;

/** Cookies a browser keeps across requests. */
class Jar {
  private readonly cookies = new Map<string, string>();
  take(res: LightMyRequestResponse): LightMyRequestResponse {
    for (const c of res.cookies as { name: string; value: string }[]) this.cookies.set(c.name, c.value);
    return res;
  }
  get header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

const csrfOf = (body: string) => /name="_csrf" value="([^"]+)"/.exec(body)![1]!;

beforeAll(async () => {
  app = await buildShared();
  const sandbox = app.platform.provider('sandbox') as SandboxProvider;
  const simulate = sandbox.simulateInbound.bind(sandbox);
  sandbox.simulateInbound = (input) => (posted.push(input), simulate(input));
  w = await workspace(app);
  const now = new Date();
  await app.platform.store.db
    .insertInto('forms')
    .values({
      id: `form_${w.workspaceId.slice(-12)}Z`,
      workspace_id: w.workspaceId,
      business_account_id: w.accountId,
      name: 'Sizes',
      category: 'OTHER',
      title: 'Your size',
      submit_label: 'Send',
      fields: JSON.stringify([
        {
          name: 'size',
          label: 'Size',
          type: 'radio',
          required: true,
          options: [
            { id: 'S', title: 'Small' },
            { id: 'L', title: 'Large' },
          ],
        },
        { name: 'notes', label: 'Notes', type: 'text', required: false },
      ]),
      provider_flow_id: FLOW_ID,
      flow_status: 'PUBLISHED',
      published_at: now,
      created_at: now,
      updated_at: now,
    })
    .execute();
  const flow = await createFlow(app, w, {
    triggers: [{ id: 'kw', type: 'keyword', parameters: { keywords: ['menu'], match: 'exact' } }],
    nodes: [
      {
        id: 'buttons',
        type: 'send_buttons',
        parameters: {
          body: 'Delivery or pickup?',
          buttons: [
            { id: 'delivery', title: 'Delivery' },
            { id: 'pickup', title: 'Pickup' },
          ],
        },
      },
      { id: 'pick', type: 'ask', parameters: { expect: 'choice', save_as: 'how' } },
      {
        id: 'list',
        type: 'send_list',
        parameters: {
          body: 'Which pizza?',
          button_text: 'Menu',
          sections: [
            {
              title: 'Pizzas',
              rows: [
                { id: 'marg', title: 'Margherita', description: 'Tomato, mozzarella' },
                { id: 'diav', title: 'Diavola' },
              ],
            },
          ],
        },
      },
      { id: 'row', type: 'ask', parameters: { expect: 'choice', save_as: 'pizza' } },
      { id: 'form', type: 'start_form', parameters: { flow_id: FLOW_ID, body: 'Your size, please', cta: 'Choose size', save_as: 'answers' } },
      { id: 'echo', type: 'send_text', parameters: { text: '{{vars.how}} {{vars.pizza}} {{vars.answers.size}} {{vars.answers.notes}}' } },
    ],
    connections: [
      { from_node: 'kw', to_node: 'buttons' },
      { from_node: 'buttons', to_node: 'pick' },
      { from_node: 'pick', from_port: 'reply', to_node: 'list' },
      { from_node: 'list', to_node: 'row' },
      { from_node: 'row', from_port: 'reply', to_node: 'form' },
      { from_node: 'form', from_port: 'submitted', to_node: 'echo' },
    ],
  });
  flowId = flow.id;
});

afterAll(() => {
  const sandbox = app.platform.provider('sandbox') as SandboxProvider;
  delete (sandbox as Partial<SandboxProvider>).simulateInbound; // the prototype's again
});

const inbound = (phone: string) =>
  app.platform.store.db
    .selectFrom('messages')
    .innerJoin('contacts', 'contacts.id', 'messages.contact_id')
    .select(['messages.type', 'messages.content', 'messages.reply_to_id'])
    .where('contacts.phone', '=', phone)
    .where('messages.direction', '=', 'inbound')
    .orderBy('messages.created_at')
    .execute();

describe('sandbox phone: interactive replies', () => {
  it('taps a button, picks a list row, submits a form: the provider’s payloads, and the flow goes on', async () => {
    const jar = new Jar();
    const phone = '+15550107001';
    const page = jar.take(await app.inject('/sandbox/phone'));
    const sent = jar.take(
      await app.inject({
        method: 'POST',
        url: '/sandbox/phone/send',
        headers: { ...FORM, cookie: jar.header },
        payload: new URLSearchParams({ _csrf: csrfOf(page.body), to: w.numberId, from: phone, name: 'Ana', text: 'menu' }).toString(),
      }),
    );
    expect(sent.statusCode).toBe(303);
    const view = async () => jar.take(await app.inject({ url: `/sandbox/phone?to=${w.numberId}`, headers: { cookie: jar.header } })).body;
    const reply = async (form: Record<string, string>) =>
      jar.take(
        await app.inject({
          method: 'POST',
          url: '/sandbox/phone/reply',
          headers: { ...FORM, cookie: jar.header },
          payload: new URLSearchParams({ _csrf: csrfOf(await view()), to: w.numberId, from: phone, ...form }).toString(),
        }),
      );

    const [buttons] = await until(
      async () => {
        const out = await outbound(app, phone);
        return out.length === 1 && out;
      },
      10_000,
      'the buttons',
    );
    const withButtons = await view();
    expect(withButtons).toContain('<button type="submit">Delivery</button>');
    expect(withButtons).toContain(`name="message_id" value="${buttons!.id}"`);
    // An option the message does not offer, or a form answer to buttons: 400, nothing sent.
    expect((await reply({ message_id: buttons!.id, kind: 'button', option: 'teleport' })).statusCode).toBe(400);
    expect((await reply({ message_id: buttons!.id, kind: 'form', f_size: 'L' })).statusCode).toBe(400);
    expect(await inbound(phone)).toHaveLength(1);
    const tapped = await reply({ message_id: buttons!.id, kind: 'button', option: 'pickup' });
    expect(tapped.statusCode).toBe(303);

    const list = await until(async () => (await outbound(app, phone))[1], 10_000, 'the list');
    const withList = await view();
    expect(withList).toContain('<legend>Menu</legend>');
    expect(withList).toContain('Margherita <small>Tomato, mozzarella</small>');
    expect((await reply({ message_id: list.id, kind: 'list', option: 'marg' })).statusCode).toBe(303);

    const form = await until(async () => (await outbound(app, phone))[2], 10_000, 'the form');
    const withForm = await view();
    expect(withForm).toContain('<summary>Choose size</summary>');
    expect(withForm).toContain('name="f_size" value="L"');
    // The required field left out: 400 naming it, nothing sent.
    const missing = await reply({ message_id: form.id, kind: 'form', f_notes: 'x' });
    expect(missing.statusCode).toBe(400);
    expect(missing.body).toContain('Size is required.');
    expect((await reply({ message_id: form.id, kind: 'form', f_size: 'XXL' })).statusCode).toBe(400);
    expect((await reply({ message_id: form.id, kind: 'form', f_size: 'L', f_notes: 'extra cheese' })).statusCode).toBe(303);

    const done = await until(async () => (await executions(app, flowId)).find((e) => e.status === 'completed'), 10_000, 'the flow to complete');
    expect(done.error).toBeNull();
    const texts = (await outbound(app, phone)).map((m) => (m.content as { text?: string }).text);
    expect(texts.at(-1)).toBe('pickup marg L extra cheese');

    // What the phone posted is the provider's payload of each kind, quoting the provider id of the message answered.
    const wamids = await app.platform.store.db
      .selectFrom('messages')
      .select(['id', 'provider_message_id'])
      .where('id', 'in', [buttons!.id, list.id, form.id])
      .execute();
    const wamid = (id: string) => wamids.find((m) => m.id === id)!.provider_message_id;
    const answers = posted.filter((p) => p.from === phone && p.message.type === 'interactive');
    expect(answers.map((p) => [p.message, p.replyTo])).toEqual([
      [{ type: 'interactive', interactive: { type: 'button_reply', button_reply: { id: 'pickup', title: 'Pickup' } } }, wamid(buttons!.id)],
      [
        { type: 'interactive', interactive: { type: 'list_reply', list_reply: { id: 'marg', title: 'Margherita', description: 'Tomato, mozzarella' } } },
        wamid(list.id),
      ],
      [
        { type: 'interactive', interactive: { type: 'nfm_reply', nfm_reply: { name: 'flow', body: 'Sent', response_json: expect.any(String) } } },
        wamid(form.id),
      ],
    ]);
    const formId = `form_${w.workspaceId.slice(-12)}Z`;
    expect(JSON.parse((answers[2]!.message as { interactive: { nfm_reply: { response_json: string } } }).interactive.nfm_reply.response_json)).toEqual({
      size: 'L',
      notes: 'extra cheese',
      form_id: formId,
      flow_token: done.id,
    });
    const received = await inbound(phone);
    // Each answer quotes the message it answers. Provider times have whole seconds: answers within
    // one second tie on created_at, so they are compared as a set of (type, quoted message).
    const pairs = received.map((m) => `${m.type} ${m.reply_to_id}`).sort();
    expect(pairs).toEqual([`text null`, `interactive ${buttons!.id}`, `interactive ${list.id}`, `form_response ${form.id}`].sort());
  });

  it('another browser cannot answer a conversation it did not write in; an unknown message is 404', async () => {
    const phone = '+15550107002';
    const jar = new Jar();
    const page = jar.take(await app.inject('/sandbox/phone'));
    jar.take(
      await app.inject({
        method: 'POST',
        url: '/sandbox/phone/send',
        headers: { ...FORM, cookie: jar.header },
        payload: new URLSearchParams({ _csrf: csrfOf(page.body), to: w.numberId, from: phone, text: 'menu' }).toString(),
      }),
    );
    const buttons = await until(async () => (await outbound(app, phone))[0], 10_000, 'the buttons');
    const other = new Jar();
    const theirs = other.take(await app.inject(`/sandbox/phone?to=${w.numberId}`));
    const foreign = await app.inject({
      method: 'POST',
      url: '/sandbox/phone/reply',
      headers: { ...FORM, cookie: other.header },
      payload: new URLSearchParams({
        _csrf: csrfOf(theirs.body),
        to: w.numberId,
        from: phone,
        message_id: buttons.id,
        kind: 'button',
        option: 'pickup',
      }).toString(),
    });
    expect(foreign.statusCode).toBe(400);
    const mine = jar.take(await app.inject({ url: `/sandbox/phone?to=${w.numberId}`, headers: { cookie: jar.header } }));
    const unknown = await app.inject({
      method: 'POST',
      url: '/sandbox/phone/reply',
      headers: { ...FORM, cookie: jar.header },
      payload: new URLSearchParams({
        _csrf: csrfOf(mine.body),
        to: w.numberId,
        from: phone,
        message_id: 'msg_0000000000000000',
        kind: 'button',
        option: 'pickup',
      }).toString(),
    });
    expect(unknown.statusCode).toBe(404);
    const noCsrf = await app.inject({
      method: 'POST',
      url: '/sandbox/phone/reply',
      headers: { ...FORM, cookie: jar.header },
      payload: new URLSearchParams({ to: w.numberId, from: phone, message_id: buttons.id, kind: 'button', option: 'pickup' }).toString(),
    });
    expect(noCsrf.statusCode).toBe(403);
    expect(await inbound(phone)).toHaveLength(1);
  });
});

describe('sandbox phone: what the business did', () => {
  it('shows the blue ticks after markChatRead and "typing" after the typing indicator, until the reply', async () => {
    const jar = new Jar();
    const phone = '+15550107099';
    const page = jar.take(await app.inject('/sandbox/phone'));
    const sent = jar.take(
      await app.inject({
        method: 'POST',
        url: '/sandbox/phone/send',
        headers: { ...FORM, cookie: jar.header },
        payload: new URLSearchParams({ _csrf: csrfOf(page.body), to: w.numberId, from: phone, name: 'Ana', text: 'Are you open?' }).toString(),
      }),
    );
    expect(sent.statusCode).toBe(303);
    const view = async () => jar.take(await app.inject({ url: `/sandbox/phone?to=${w.numberId}`, headers: { cookie: jar.header } })).body;
    expect(await view()).not.toContain('read ✓✓');
    const api = (method: 'GET' | 'POST', url: string, payload?: object) =>
      app.inject({ method, url, headers: { 'x-api-key': w.key }, ...(payload ? { payload } : {}) });
    const chat = (await api('GET', '/api/chatapp/chats')).json().data.find((c: { contact: { contact_no: string } }) => c.contact.contact_no === phone);
    expect((await api('POST', `/api/chatapp/chats/${chat.id}/read`)).statusCode).toBe(200);
    expect(await view()).toContain('read ✓✓');
    expect(await view()).not.toContain(' · typing');
    expect((await api('POST', `/api/chatapp/chats/${chat.id}/typing`)).statusCode).toBe(200);
    expect(await view()).toContain(' · typing');
    const reply = await api('POST', '/api/chatapp/send', {
      contact_no: phone,
      chatapp_phone_number: w.numberId,
      messageType: 'text',
      message: 'Yes, until 10.',
    });
    expect(reply.statusCode, reply.body).toBe(201);
    expect(await view()).not.toContain(' · typing');
  });
});
