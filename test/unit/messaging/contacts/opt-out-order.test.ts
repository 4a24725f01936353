// Issue 41, part B: which flow answers is never chance (priority, then created_at, then id; an
// opt-out keyword before any flow), the automatic opt-out confirmation in the customer's language,
// nothing but that confirmation after STOP, and the one keyword normaliser every matcher shares.
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { loginCodeOf } from '#server/apis/login/verification.js';
import { confirmationText, defaultKeywords, keywordKind } from '#server/apis/messaging/contacts/opt-out.js';
import { keywordMatches } from '#server/apis/messaging/bots/text-match.js';
import { triggerMatches } from '#server/apis/messaging/automation/triggers.js';
import { normalizeKeyword } from '#server/lib/keywords.js';
import { industryPacks, packFlowPriority } from '#server/apis/messaging/packs/catalog.js';
import { api, createFlow, executions, inboundText, outbound, until, workspace, type Workspace } from '../automation/support.js';

let app: FastifyInstance;

beforeAll(async () => {
  app = await buildShared({ env: { RATE_LIMIT_IP_PER_MINUTE: '1000' } });
}, 120_000);

const welcome = {
  triggers: [{ id: 'first', type: 'message_received', parameters: { new_contacts_only: true } }],
  nodes: [{ id: 'hi', type: 'send_text', parameters: { text: 'Welcome to the clinic!' } }],
  connections: [{ from_node: 'first', to_node: 'hi' }],
};
const booking = {
  triggers: [{ id: 'book', type: 'keyword', parameters: { keywords: ['book'], match: 'contains' } }],
  nodes: [{ id: 'ask', type: 'send_text', parameters: { text: 'Which day suits you?' } }],
  connections: [{ from_node: 'book', to_node: 'ask' }],
};

const texts = async (phone: string) => (await outbound(app, phone)).map((m) => (m.content as { text?: string }).text);

describe('trigger order', () => {
  it('the highest priority answers; equal priorities by created_at then id, as the API shows', async () => {
    const w = await workspace(app);
    // Booking created first, but the welcome has the higher priority: a new customer writing
    // "I want to book" is greeted, every time.
    const book = await createFlow(app, w, booking, { name: 'Booking' });
    const hello = await createFlow(app, w, welcome, { name: 'Welcome', priority: 10 });
    const shown = (await api(app, w.key)('GET', `/api/automation/${hello.id}`)).json();
    expect(shown.priority).toBe(10);
    expect((await api(app, w.key)('GET', `/api/automation/${book.id}`)).json().priority).toBe(0);
    for (const [i, phone] of ['+4915170000101', '+4915170000102', '+4915170000103'].entries()) {
      await inboundText(app, w, phone, 'I want to book an appointment');
      await until(async () => (await texts(phone)).length === 1, 15_000, `answer ${i}`);
      expect(await texts(phone)).toEqual(['Welcome to the clinic!']);
    }
    expect(await executions(app, book.id)).toHaveLength(0);
    // Priorities updated through the API change the order (omitted on update: unchanged).
    const update = await api(app, w.key)('PUT', `/api/automation/${book.id}`, { name: 'Booking', waba_id: w.accountId, ...booking, priority: 20 });
    expect(update.statusCode, update.body).toBe(200);
    expect(update.json().priority).toBe(20);
    await inboundText(app, w, '+4915170000104', 'book please');
    await until(async () => (await texts('+4915170000104')).length === 1, 15_000, 'booking answer');
    expect(await texts('+4915170000104')).toEqual(['Which day suits you?']);
    const again = await api(app, w.key)('PUT', `/api/automation/${book.id}`, { name: 'Booking 2', waba_id: w.accountId, ...booking });
    expect(again.json().priority).toBe(20);
    // Out of range: 400, nothing changed.
    const bad = await api(app, w.key)('PUT', `/api/automation/${book.id}`, { name: 'Booking', waba_id: w.accountId, ...booking, priority: 1001 });
    expect(bad.statusCode).toBe(400);
  });

  it('equal priorities and the same created_at: the smaller id answers, on every run', async () => {
    const w = await workspace(app);
    const a = await createFlow(app, w, { ...booking, nodes: [{ id: 'ask', type: 'send_text', parameters: { text: 'A' } }] });
    const b = await createFlow(app, w, { ...booking, nodes: [{ id: 'ask', type: 'send_text', parameters: { text: 'B' } }] });
    const db = app.platform.store.db;
    const same = new Date('2026-01-01T00:00:00Z');
    await db.updateTable('automation_flows').set({ created_at: same }).where('id', 'in', [a.id, b.id]).execute();
    const expected = [a.id, b.id].sort()[0] === a.id ? 'A' : 'B';
    for (const phone of ['+4915170000111', '+4915170000112']) {
      await inboundText(app, w, phone, 'book');
      await until(async () => (await texts(phone)).length === 1, 15_000, 'answer');
      expect(await texts(phone)).toEqual([expected]);
    }
  });
});

describe('pack priorities', () => {
  it("every pack's flows have distinct priorities, a new-contact welcome above the rest, in the pack's order", () => {
    for (const pack of industryPacks().values()) {
      const priorities = pack.flows.map((f, i) => packFlowPriority(f, i));
      expect(new Set(priorities).size, pack.slug).toBe(priorities.length);
      expect(
        [...priorities].sort((x, y) => y - x),
        pack.slug,
      ).toEqual(priorities.slice().sort((x, y) => y - x));
      pack.flows.forEach((f, i) => {
        const welcome = f.triggers.some((t) => t.type === 'message_received' && (t.parameters as { new_contacts_only?: boolean }).new_contacts_only);
        if (welcome) expect(priorities[i], `${pack.slug} ${f.key}`).toBe(Math.max(...priorities));
      });
    }
  });

  it('an applied pack shows each flow with its priority', async () => {
    const w = await workspace(app);
    const res = await api(app, w.key)('POST', '/api/industry-packs/apply', {
      slug: 'dental-clinic',
      variables: { company_name: 'Smile', city: 'Berlin' },
      waba_id: w.accountId,
    });
    expect(res.statusCode, res.body).toBeLessThan(300);
    const flows = (await api(app, w.key)('GET', '/api/automation')).json().data as { name: string; priority: number; trigger_types: string[] }[];
    const welcome = flows.find((f) => f.trigger_types.includes('message_received'))!;
    const others = flows.filter((f) => f !== welcome);
    expect(others.length).toBeGreaterThan(0);
    for (const f of others) expect(welcome.priority, f.name).toBeGreaterThan(f.priority);
  });
});

describe('opt-out before any flow', () => {
  let w: Workspace;
  beforeAll(async () => {
    w = await workspace(app);
    await createFlow(app, w, welcome, { priority: 100 });
  });

  it('a new contact whose first message is STOPP is opted out, confirmed in German, and gets no welcome', async () => {
    const set = await api(app, w.key)('PUT', '/api/opt-out-settings', { confirmation: true });
    expect(set.statusCode, set.body).toBe(200);
    expect(set.json()).toMatchObject({ confirmation: true, opt_out_confirmation: null });
    const phone = '+4915170000201';
    await inboundText(app, w, phone, 'STOPP');
    await until(async () => (await texts(phone)).length === 1, 15_000, 'confirmation');
    expect(await texts(phone)).toEqual([
      'Sie wurden abgemeldet und erhalten keine Nachrichten mehr von uns. Antworten Sie ANMELDEN, um sich wieder anzumelden.',
    ]);
    const contact = (await api(app, w.key)('GET', `/api/contacts?q=${encodeURIComponent(phone)}`)).json().data[0];
    expect(contact).toMatchObject({ opted_out: true, opt_out_source: 'keyword' });
    expect(await app.platform.store.db.selectFrom('automation_executions').select('id').where('contact_id', '=', contact.id).execute()).toEqual([]);

    // After STOP: free-form marketing is refused, as a template is; nothing is stored.
    const promo = await api(app, w.key)('POST', '/api/chatapp/send', {
      contact_no: phone,
      chatapp_phone_number: w.phone,
      messageType: 'text',
      message: 'PS: 20% off this weekend!',
    });
    expect(promo.statusCode).toBe(422);
    expect(promo.json().type).toBe('https://chatapp.example/problems/opted-out');
    expect(await texts(phone)).toHaveLength(1);

    // The customer writes again: a reply inside its own window is allowed (provider times are
    // whole seconds, so the opt-out is set a second back rather than waiting on the clock).
    await app.platform.store.db
      .updateTable('contacts')
      .set({ opted_out_at: new Date(Date.now() - 2000) })
      .where('id', '=', contact.id)
      .execute();
    await inboundText(app, w, phone, 'Wann habt ihr offen?');
    const reply = await api(app, w.key)('POST', '/api/chatapp/send', {
      contact_no: phone,
      chatapp_phone_number: w.phone,
      messageType: 'text',
      message: 'Ab 9 Uhr.',
    });
    expect(reply.statusCode, reply.body).toBe(201);

    // START opts back in and is confirmed (in English: START is an English keyword).
    await inboundText(app, w, phone, 'start');
    await until(async () => (await texts(phone)).length === 3, 15_000, 'opt-in confirmation');
    expect((await texts(phone))[2]).toBe('You are subscribed again. Reply STOP to unsubscribe.');
  });

  it('without the confirmation turned on, STOP is answered by nothing', async () => {
    const quiet = await workspace(app);
    const flow = await createFlow(app, quiet, welcome, { priority: 100 });
    const phone = '+4915170000202';
    await inboundText(app, quiet, phone, '\u200BＳｔｏｐ!');
    const claimed = async () =>
      (
        await app.platform.store.db
          .selectFrom('automation_inbound_claims as c')
          .innerJoin('messages as m', 'm.id', 'c.message_id')
          .innerJoin('contacts as k', 'k.id', 'm.contact_id')
          .select('c.claimed_at')
          .where('k.phone', '=', phone)
          .where('k.workspace_id', '=', quiet.workspaceId)
          .executeTakeFirst()
      )?.claimed_at;
    await until(async () => Boolean(await claimed()), 15_000, 'dispatch');
    // A second customer's message goes through the same dispatcher after it: once it is answered,
    // the first one was too.
    await inboundText(app, quiet, '+4915170000203', 'hello');
    await until(async () => (await texts('+4915170000203')).length === 1, 15_000, 'welcome of the other');
    expect(await texts(phone)).toEqual([]);
    expect((await executions(app, flow.id)).length).toBe(1);
    const contact = (await api(app, quiet.key)('GET', `/api/contacts?q=${encodeURIComponent(phone)}`)).json().data[0];
    expect(contact.opted_out).toBe(true);
  });

  it('own confirmation texts; a blank or over-long one is refused and changes nothing', async () => {
    const c = await workspace(app);
    const own = await api(app, c.key)('PUT', '/api/opt-out-settings', { confirmation: true, opt_out_confirmation: 'Bye! Text START to return.' });
    expect(own.json()).toMatchObject({ confirmation: true, opt_out_confirmation: 'Bye! Text START to return.', opt_in_confirmation: null });
    expect((await api(app, c.key)('PUT', '/api/opt-out-settings', { opt_in_confirmation: '   ' })).statusCode).toBe(422);
    expect((await api(app, c.key)('PUT', '/api/opt-out-settings', { opt_in_confirmation: 'x'.repeat(1025) })).statusCode).toBe(400);
    expect((await api(app, c.key)('PUT', '/api/opt-out-settings', { confirmation: 'yes' })).statusCode).toBe(400);
    const now = (await api(app, c.key)('GET', '/api/opt-out-settings')).json();
    expect(now).toMatchObject({ confirmation: true, opt_out_confirmation: 'Bye! Text START to return.', opt_in_confirmation: null });
    // Keyword lists were never given: still the defaults.
    expect(now.opt_out_keywords).toEqual(defaultKeywords(null).optOut);
  });
});

describe('default keywords per locale', () => {
  it('every language, STOP and UNSUBSCRIBE first, then the workspace locale', async () => {
    const w = await workspace(app);
    expect((await api(app, w.key)('PUT', '/api/messaging-settings', { locale: 'de-DE' })).statusCode).toBe(200);
    const got = (await api(app, w.key)('GET', '/api/opt-out-settings')).json();
    expect(got.opt_out_keywords.slice(0, 5)).toEqual(['STOP', 'UNSUBSCRIBE', 'STOPP', 'ABMELDEN', 'ABBESTELLEN']);
    for (const k of ['Abbestellen', 'Cancelar', 'Descadastrar', 'Darse de baja', 'Stopp', 'STOP', 'UNSUBSCRIBE', 'Arrêt', 'Uitschrijven']) {
      expect(keywordKind(got, k), k).toBe('opt_out');
    }
    expect(got.opt_in_keywords.slice(0, 3)).toEqual(['START', 'SUBSCRIBE', 'ANMELDEN']);
    const pt = defaultKeywords('pt-BR').optOut;
    expect(pt.slice(0, 6)).toEqual(['STOP', 'UNSUBSCRIBE', 'PARAR', 'SAIR', 'CANCELAR', 'DESCADASTRAR']);
    // A phrase that merely contains a keyword is not one.
    expect(keywordKind(got, 'please stop the delivery at 5')).toBeNull();
  });

  it('the default confirmation speaks the language of the keyword written', () => {
    const settings = {
      ...{ confirmation: true, opt_out_confirmation: null, opt_in_confirmation: null, updated_at: null },
      opt_out_keywords: defaultKeywords('pt-BR').optOut,
      opt_in_keywords: defaultKeywords('pt-BR').optIn,
    };
    expect(confirmationText(settings, 'opt_out', 'Descadastrar', 'pt-BR')).toBe(
      'Você foi descadastrado e não receberá mais mensagens nossas. Responda INICIAR para voltar a receber.',
    );
    expect(confirmationText(settings, 'opt_out', 'darse de baja', 'pt-BR')).toContain('Te has dado de baja');
    // CANCELAR is Portuguese and Spanish: the workspace's language decides.
    expect(confirmationText(settings, 'opt_out', 'Cancelar', 'pt-BR')).toContain('Você foi descadastrado');
    expect(confirmationText(settings, 'opt_out', 'Cancelar', 'es-MX')).toContain('Te has dado de baja');
    expect(confirmationText(settings, 'opt_out', 'STOP', 'pt-BR')).toBe(
      'You have been unsubscribed and will get no more messages from us. Reply START to subscribe again.',
    );
    expect(confirmationText({ ...settings, opt_in_keywords: [] }, 'opt_out', 'STOP', null)).toBe(
      'You have been unsubscribed and will get no more messages from us.',
    );
  });
});

describe('one keyword normaliser for every matcher', () => {
  // What phones send for STOP: typed on another keyboard, pasted, dictated.
  const stops: [string, string][] = [
    ['plain', 'STOP'],
    ['lower case', 'stop'],
    ['full-width (CJK keyboards)', 'ＳＴＯＰ'],
    ['zero-width space inside', 'ST\u200BOP'],
    ['word joiner and BOM', '\uFEFFSTOP\u2060'],
    ['soft hyphen', 'ST\u00ADOP'],
    ['bidi marks (RTL keyboards)', '\u200FSTOP\u200E'],
    ['no-break spaces around', '\u00A0STOP\u202F'],
    ['ideographic space and punctuation', '\u3000Stop!'],
    ['line break after', 'Stop\n'],
  ];
  it.each(stops)('STOP %s', (_what, text) => {
    expect(normalizeKeyword(text)).toBe('STOP');
    expect(keywordKind({ opt_out_keywords: ['STOP'], opt_in_keywords: ['START'] }, text)).toBe('opt_out');
    // Bot keywords and flow keyword triggers fold the same way.
    expect(keywordMatches(text, 'stop', 'exact')).toBe(true);
    expect(
      triggerMatches({ id: 't', type: 'keyword', parameters: { keywords: ['Stop'] } } as never, { type: 'text', text, replyId: null, firstMessage: false }),
    ).toBe(true);
  });

  it.each([
    ['full-width', 'ＬＯＧＩＮ Ｋ７Ｑ２Ｍ９ＸＤ'],
    ['zero-width space inside', 'LO\u200BGIN K7Q2M9XD'],
    ['no-break space', 'LOGIN\u00A0K7Q2M9XD'],
    ['bidi mark and ideographic space', '\u200FLOGIN\u3000K7Q2M9XD'],
  ])('LOGIN %s (the folding it had, now shared)', (_what, text) => {
    expect(loginCodeOf(text)).toBe('K7Q2M9XD');
  });

  it('spaces inside a keyword fold to one; accents and case fold; other scripts stay apart', () => {
    expect(normalizeKeyword('Darse\u00A0de\u2003 BAJA')).toBe('DARSE DE BAJA');
    expect(normalizeKeyword('Arrêt')).toBe('ARRET');
    expect(normalizeKeyword('ＡＢＢＥＳＴＥＬＬＥＮ')).toBe('ABBESTELLEN');
    // Cyrillic С and Т look like Latin ones but are other letters.
    expect(normalizeKeyword('\u0421\u0422OP')).not.toBe('STOP');
    expect(normalizeKeyword('!!!')).toBe('');
  });

  it('sequence keywords enrol through the same normaliser', async () => {
    const w = await workspace(app);
    const seq = await api(app, w.key)('POST', '/api/sequences', {
      name: 'Tips',
      waba_id: w.accountId,
      trigger: { type: 'keyword', keyword: 'Tips' },
      steps: [{ delay: 0, delay_unit: 'minutes', message_type: 'text', text: 'Tip one' }],
    });
    expect(seq.statusCode, seq.body).toBe(201);
    const phone = '+4915170000301';
    await inboundText(app, w, phone, '\u200BＴＩＰＳ ');
    await until(
      async () =>
        Boolean(
          await app.platform.store.db
            .selectFrom('automation_sequence_enrolments as e')
            .innerJoin('contacts as c', 'c.id', 'e.contact_id')
            .select('e.id')
            .where('c.phone', '=', phone)
            .where('e.sequence_id', '=', seq.json().id)
            .executeTakeFirst(),
        ),
      15_000,
      'enrolment',
    );
  });
});
