// The sandbox provider on a test store: numbers it creates, statuses in order, inbound
// payloads in Meta's format, and the provider's rules (24-hour window, recipients, templates).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '#server/store/db.js';
import { openTestStore } from '#test/support/store.js';
import { newId } from '#server/lib/ids.js';
import { SandboxProvider, addSandboxNumber, createSandboxAccount } from '#server/providers/sandbox.js';
import { ProviderError, type ProviderNumber, type ProviderWebhookPayload } from '#server/providers/types.js';

let store: Store;
let workspaceId: string;
let number: ProviderNumber;
let pnRowId: string;
let delivered: ProviderWebhookPayload[];
let sandbox: SandboxProvider;
const customer = '4915112345678';
const text = { type: 'text', text: { body: 'Hi' } } as const;

// The migrated template (test/support/store.ts), or PostgreSQL under test:pg: a store migrated from
// scratch here compiled PGlite again and ran every migration, past the hook's timeout when busy.
beforeAll(async () => {
  store = await openTestStore();
  workspaceId = newId('ws');
  await store.db
    .insertInto('workspaces')
    .values({ id: workspaceId, name: 'Acme', slug: `acme-${workspaceId.slice(-6).toLowerCase()}` })
    .execute();
  const { account, numbers } = await createSandboxAccount(store.db, workspaceId, { name: 'Acme' });
  number = { wabaId: account.provider_waba_id, phoneNumberId: numbers[0].provider_phone_number_id };
  pnRowId = numbers[0].id;
});
afterAll(() => store?.close());

beforeEach(() => {
  sandbox?.close();
  delivered = [];
  sandbox = new SandboxProvider({ db: store.db, testMode: true, deliverWebhook: async (p) => void delivered.push(p) });
});

async function failure(promise: Promise<unknown>): Promise<ProviderError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ProviderError);
  return error as ProviderError;
}

const statusesOf = (payloads: ProviderWebhookPayload[]) => payloads.flatMap((p) => p.entry[0].changes[0].value.statuses ?? []);

describe('numbers', () => {
  it('creates an account whose numbers it lists in E.164; more numbers can be added', async () => {
    const { account } = await createSandboxAccount(store.db, workspaceId, { numbers: 2 });
    expect(account).toMatchObject({ kind: 'sandbox', workspace_id: workspaceId });
    expect(account.provider_waba_id).toMatch(/^\d{15}$/);
    await addSandboxNumber(store.db, account);
    const numbers = await sandbox.listPhoneNumbers({ wabaId: account.provider_waba_id });
    expect(numbers).toHaveLength(3);
    for (const n of numbers) expect(n.displayPhoneNumber).toMatch(/^\+1555\d{7}$/);
  });

  it('answers a business profile and a sample catalog with products', async () => {
    expect((await sandbox.getBusinessProfile(number)).about).toContain('Acme');
    const [catalog] = await sandbox.listCatalogs(number);
    const products = await sandbox.listProducts(number, catalog.id);
    expect(products.length).toBeGreaterThan(2);
    expect(products[0]).toMatchObject({ currency: 'EUR', availability: 'in_stock' });
    await failure(sandbox.listProducts(number, '123'));
  });
});

describe('inbound and statuses', () => {
  it('the simulated phone posts inbound messages in Meta format', async () => {
    const { providerMessageId } = await sandbox.simulateInbound({
      phoneNumberId: number.phoneNumberId,
      from: `+${customer}`,
      name: 'Ada',
      message: { type: 'text', text: { body: 'Hello?' } },
    });
    expect(delivered).toHaveLength(1);
    const payload = delivered[0];
    expect(payload.object).toBe('whatsapp_business_account');
    expect(payload.entry[0].id).toBe(number.wabaId);
    const change = payload.entry[0].changes[0];
    expect(change.field).toBe('messages');
    expect(change.value.messaging_product).toBe('whatsapp');
    expect(change.value.metadata.phone_number_id).toBe(number.phoneNumberId);
    expect(change.value.metadata.display_phone_number).toMatch(/^1555\d{7}$/);
    expect(change.value.contacts).toEqual([{ profile: { name: 'Ada' }, wa_id: customer }]);
    const [message] = change.value.messages!;
    expect(message).toMatchObject({ from: customer, id: providerMessageId, type: 'text', text: { body: 'Hello?' } });
    expect(message.id).toMatch(/^wamid\./);
    expect(message.timestamp).toMatch(/^\d{10}$/);
  });

  it('inbound media carries a media id and mime type under its type', async () => {
    await sandbox.simulateInbound({
      phoneNumberId: number.phoneNumberId,
      from: customer,
      message: { type: 'image', media: { mime_type: 'image/jpeg', caption: 'Look' } },
      replyTo: 'wamid.x',
    });
    const [message] = delivered[0].entry[0].changes[0].value.messages!;
    expect(message.type).toBe('image');
    expect(message.image).toMatchObject({ mime_type: 'image/jpeg', caption: 'Look', id: expect.stringMatching(/^\d+$/) });
    expect(message.context).toMatchObject({ id: 'wamid.x' });
  });

  it('a send inside the window is answered with a wamid, then sent → delivered → read', async () => {
    await sandbox.simulateInbound({ phoneNumberId: number.phoneNumberId, from: customer, message: { type: 'text', text: { body: 'Hi' } } });
    delivered.length = 0;
    const result = await sandbox.sendMessage(number, `+${customer}`, text, { bizOpaqueCallbackData: 'ref-1' });
    expect(result.providerMessageId).toMatch(/^wamid\./);
    expect(delivered).toHaveLength(0); // statuses never precede the send's answer
    await sandbox.idle();
    const statuses = statusesOf(delivered);
    expect(statuses.map((s) => s.status)).toEqual(['sent', 'delivered', 'read']);
    for (const s of statuses) expect(s).toMatchObject({ id: result.providerMessageId, recipient_id: customer, biz_opaque_callback_data: 'ref-1' });
    expect(statuses[0].pricing).toMatchObject({ category: 'service', pricing_model: 'PMP' });
    expect(delivered[0].entry[0].changes[0].value.metadata.phone_number_id).toBe(number.phoneNumberId);
  });

  it('keeps the order with real delays too', async () => {
    const slow = new SandboxProvider({ db: store.db, delays: { sent: 5, delivered: 5, read: 5 }, deliverWebhook: async (p) => void delivered.push(p) });
    const to = '4915199999991';
    await slow.simulateInbound({ phoneNumberId: number.phoneNumberId, from: to, message: { type: 'text', text: { body: 'Hi' } } });
    await Promise.all([slow.sendMessage(number, to, text), slow.sendMessage(number, to, text)]);
    await slow.idle();
    const byMessage = new Map<string, string[]>();
    for (const s of statusesOf(delivered)) byMessage.set(s.id, [...(byMessage.get(s.id) ?? []), s.status]);
    expect([...byMessage.values()]).toEqual([
      ['sent', 'delivered', 'read'],
      ['sent', 'delivered', 'read'],
    ]);
  });

  it('a recipient not on WhatsApp is accepted, then fails with 131026', async () => {
    const result = await sandbox.sendMessage(number, '4915100000000', { type: 'template', template: { name: 'order_update', language: { code: 'en' } } });
    await sandbox.idle();
    const [status] = statusesOf(delivered);
    expect(status).toMatchObject({ id: result.providerMessageId, status: 'failed', errors: [{ code: 131026 }] });
  });

  it('close() drops statuses not yet emitted', async () => {
    const slow = new SandboxProvider({ db: store.db, delays: { sent: 60_000 }, deliverWebhook: async (p) => void delivered.push(p) });
    await slow.sendMessage(number, customer, { type: 'template', template: { name: 'order_update', language: { code: 'en' } } });
    slow.close();
    await slow.idle();
    expect(delivered).toHaveLength(0);
  });
});

describe('hand-off retries', () => {
  const template = { type: 'template', template: { name: 'order_update', language: { code: 'en' } } } as const;
  const refused = (statusCode: number) => Object.assign(new Error(`the inbound webhook answered ${statusCode}`), { statusCode });

  it('a status the webhook throttles or fails is handed over again after a backoff, in order, until taken', async () => {
    const failures = [refused(429), refused(503), new Error('connection terminated'), refused(429)];
    const waits: number[] = [];
    const flaky = new SandboxProvider({
      db: store.db,
      testMode: true,
      retryDelayMs: (attempt) => (waits.push(attempt), 0),
      deliverWebhook: async (p) => {
        const failure = failures.shift();
        if (failure) throw failure;
        delivered.push(p);
      },
    });
    const { providerMessageId } = await flaky.sendMessage(number, customer, template);
    await flaky.idle();
    expect(statusesOf(delivered).map((s) => [s.id, s.status])).toEqual([
      [providerMessageId, 'sent'],
      [providerMessageId, 'delivered'],
      [providerMessageId, 'read'],
    ]);
    expect(waits).toEqual([1, 2, 3, 4]); // one backoff per failure, growing with the attempt
  });

  it('a payload refused as malformed is not retried but reported; close() ends the retries of a failing webhook', async () => {
    const reported: unknown[] = [];
    let calls = 0;
    const malformed = new SandboxProvider({
      db: store.db,
      testMode: true,
      retryDelayMs: () => 0,
      onDeliveryError: (e) => void reported.push(e),
      deliverWebhook: async () => {
        calls++;
        throw refused(400);
      },
    });
    await malformed.sendMessage(number, customer, template);
    await malformed.idle();
    expect([calls, reported]).toEqual([1, [expect.objectContaining({ statusCode: 400 })]]);

    let attempts = 0;
    let closing!: () => void;
    const tried = new Promise<void>((resolve) => (closing = resolve));
    const down = new SandboxProvider({
      db: store.db,
      testMode: true,
      retryDelayMs: () => 60_000,
      deliverWebhook: async () => {
        attempts++;
        closing();
        throw refused(503);
      },
    });
    await down.sendMessage(number, customer, template);
    await tried;
    down.close(); // the backoff of 60 s is cut short, and nothing more is tried
    await down.idle();
    expect(attempts).toBe(1);
  });

  it('a simulated phone message is tried a few times, then its sender hears of the failure', async () => {
    let attempts = 0;
    const down = new SandboxProvider({
      db: store.db,
      testMode: true,
      retryDelayMs: () => 0,
      deliverWebhook: async () => {
        attempts++;
        throw refused(503);
      },
    });
    await expect(
      down.simulateInbound({ phoneNumberId: number.phoneNumberId, from: customer, message: { type: 'text', text: { body: 'Hi' } } }),
    ).rejects.toMatchObject({ statusCode: 503 });
    expect(attempts).toBe(4);
  });
});

describe('rules', () => {
  it('refuses malformed recipients with code 100 → 422', async () => {
    const error = await failure(sandbox.sendMessage(number, '12ab', text));
    expect(error.code).toBe(100);
    expect(error.toProblem().status).toBe(422);
  });

  it("refuses what Meta's rules refuse (131009 naming the field): a 21-character button title, a list of 11 rows, two emoji, a navigate Flow without a screen", async () => {
    const button = (title: string) => ({ type: 'reply' as const, reply: { id: 'a', title } });
    const tooLong = await failure(
      sandbox.sendMessage(number, customer, {
        type: 'interactive',
        interactive: { type: 'button', body: { text: 'Pick' }, action: { buttons: [button('x'.repeat(21))] } },
      }),
    );
    expect(tooLong.code).toBe(131009);
    expect(tooLong.details).toMatch(/^interactive\.action\.buttons\.0\.reply\.title: /);
    const rows = Array.from({ length: 11 }, (_, i) => ({ id: `r${i}`, title: `Row ${i}` }));
    const list = await failure(
      sandbox.sendMessage(number, customer, {
        type: 'interactive',
        interactive: { type: 'list', body: { text: 'Pick' }, action: { button: 'Open', sections: [{ rows }] } },
      }),
    );
    expect(list.details).toMatch(/^interactive\.action\.sections: .*at most 10 rows/);
    const emoji = await failure(sandbox.sendMessage(number, customer, { type: 'reaction', reaction: { message_id: 'wamid.x', emoji: '👍👍' } }));
    expect(emoji.details).toMatch(/^reaction\.emoji: /);
    const flow = () => ({
      type: 'interactive' as const,
      interactive: {
        type: 'flow' as const,
        body: { text: 'Book' },
        action: {
          name: 'flow' as const,
          parameters: { flow_message_version: '3' as const, flow_id: '1', flow_cta: 'Open', flow_action: 'navigate' as const },
        },
      },
    });
    const noScreen = await failure(sandbox.sendMessage(number, customer, flow()));
    expect(noScreen.code).toBe(131009);
    expect(noScreen.details).toMatch(/^interactive\.action\.parameters\.flow_action_payload\.screen: /);
  });

  it('refuses unknown sender numbers', async () => {
    const error = await failure(sandbox.sendMessage({ ...number, phoneNumberId: '199999999999999' }, customer, text));
    expect(error.code).toBe(100);
  });

  it('refuses free-form messages outside the 24-hour window (131047) but allows templates', async () => {
    const stranger = '4915177777777';
    const error = await failure(sandbox.sendMessage(number, stranger, text));
    expect(error.code).toBe(131047);
    expect(error.toProblem().status).toBe(422);
    expect(error.toProblem().problem.type).toBe('https://chatapp.example/problems/outside-window');
    const ok = await sandbox.sendMessage(number, stranger, { type: 'template', template: { name: 'order_update', language: { code: 'en' } } });
    expect(ok.providerMessageId).toMatch(/^wamid\./);
  });

  it('an inbound message older than 24 hours does not open the window; a recent one does', async () => {
    const to = '4915166666666';
    const hour = 3600_000;
    await sandbox.simulateInbound({
      phoneNumberId: number.phoneNumberId,
      from: to,
      message: { type: 'text', text: { body: 'old' } },
      at: new Date(Date.now() - 25 * hour),
    });
    expect((await failure(sandbox.sendMessage(number, to, text))).code).toBe(131047);
    await sandbox.simulateInbound({
      phoneNumberId: number.phoneNumberId,
      from: to,
      message: { type: 'text', text: { body: 'new' } },
      at: new Date(Date.now() - 23 * hour),
    });
    expect((await sandbox.sendMessage(number, to, text)).providerMessageId).toMatch(/^wamid\./);
  });

  it('the window also follows inbound messages already in the store (after a restart)', async () => {
    const to = '4915155555555';
    const contactId = newId('ct');
    await store.db
      .insertInto('contacts')
      .values({ id: contactId, workspace_id: workspaceId, phone: `+${to}` })
      .execute();
    const fresh = () => new SandboxProvider({ db: store.db, testMode: true, deliverWebhook: async () => {} });
    expect((await failure(fresh().sendMessage(number, to, text))).code).toBe(131047);
    await store.db
      .insertInto('messages')
      .values({
        id: newId('msg'),
        workspace_id: workspaceId,
        phone_number_id: pnRowId,
        contact_id: contactId,
        direction: 'inbound',
        type: 'text',
        content: JSON.stringify({ body: 'hi' }),
        provider_message_id: `wamid.test-${contactId}`,
        status: 'received',
        created_at: new Date(Date.now() - 3600_000),
      })
      .execute();
    expect((await fresh().sendMessage(number, to, text)).providerMessageId).toMatch(/^wamid\./);
  });

  it('approves templates by rule: names with "reject" are rejected, others approved', async () => {
    const components = [{ type: 'BODY', text: 'Hi' }];
    const ok = await sandbox.createTemplate(number, { name: 'order_update', language: 'en', category: 'UTILITY', components });
    const bad = await sandbox.createTemplate(number, { name: 'please_reject_me', language: 'en', category: 'MARKETING', components });
    expect(ok.status).toBe('APPROVED');
    expect(bad.status).toBe('REJECTED');
    const statuses = await sandbox.getTemplateStatuses(number, [
      { id: ok.id, name: 'order_update', language: 'en' },
      { id: bad.id, name: 'please_reject_me', language: 'en', category: 'MARKETING' },
    ]);
    expect(statuses.map((s) => [s.id, s.status, s.rejectedReason])).toEqual([
      [ok.id, 'APPROVED', null],
      [bad.id, 'REJECTED', 'INVALID_FORMAT'],
    ]);
    const error = await failure(sandbox.sendMessage(number, customer, { type: 'template', template: { name: 'please_reject_me', language: { code: 'en' } } }));
    expect(error.code).toBe(132001);
  });

  it('with review on sync, templates start PENDING and settle on the next status sync', async () => {
    const reviewing = new SandboxProvider({ db: store.db, testMode: true, templateReview: 'on-sync', deliverWebhook: async () => {} });
    const t = await reviewing.createTemplate(number, { name: 'welcome', language: 'en_US', category: 'UTILITY', components: [{ type: 'BODY', text: 'Hi' }] });
    expect(t.status).toBe('PENDING');
    const [status] = await reviewing.getTemplateStatuses(number, [{ id: t.id, name: 'welcome', language: 'en_US' }]);
    expect(status.status).toBe('APPROVED');
  });

  it('the marketing messages route takes templates only', async () => {
    const error = await failure(sandbox.sendMessage(number, customer, text, { route: 'marketing_messages' }));
    expect(error.code).toBe(100);
    expect(await sandbox.getMarketingMessagesStatus(number)).toBe('ONBOARDED');
  });
});
