// The Cloud API adapter against the fake Graph server: wire shapes, auth, error mapping, and
// the retry rules (reads retried within bounds, sends never re-sent after a timeout or 5xx).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createServer } from 'node:net';
import { CloudApiProvider, toMinorUnits } from '#server/providers/cloud-api.js';
import { ProviderError, type InteractiveButtons, type ProviderNumber, type TemplateMessage } from '#server/providers/types.js';
import { FAKE_CATALOG_ID, FAKE_PHONE_NUMBER_ID, FAKE_TOKEN, FAKE_WABA_ID, FakeProvider } from '#test/fakes/fake-provider.js';

const fake = new FakeProvider();
let provider: CloudApiProvider;
const number: ProviderNumber = { wabaId: FAKE_WABA_ID, phoneNumberId: FAKE_PHONE_NUMBER_ID, accessToken: FAKE_TOKEN };
const text = { type: 'text', text: { body: 'Hello' } } as const;

beforeAll(async () => {
  await fake.start();
});
afterAll(() => fake.stop());
beforeEach(() => {
  fake.reset();
  provider = new CloudApiProvider({ baseUrl: fake.baseUrl, timeoutMs: 300, backoffBaseMs: 1, maxRetries: 2 });
});

async function failure(promise: Promise<unknown>): Promise<ProviderError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ProviderError);
  return error as ProviderError;
}

describe('requests', () => {
  it('sends a text message with the bearer token and Graph body', async () => {
    const result = await provider.sendMessage(number, '+4915112345678', text, { replyTo: 'wamid.prev', bizOpaqueCallbackData: 'cmp_1' });
    expect(result.providerMessageId).toMatch(/^wamid\./);
    expect(result.waId).toBe('4915112345678');
    const [req] = fake.requests;
    expect(req.method).toBe('POST');
    expect(req.path).toBe(`/${FAKE_PHONE_NUMBER_ID}/messages`);
    expect(req.headers.authorization).toBe(`Bearer ${FAKE_TOKEN}`);
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.body).toEqual({
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to: '4915112345678',
      type: 'text',
      text: { body: 'Hello' },
      context: { message_id: 'wamid.prev' },
      biz_opaque_callback_data: 'cmp_1',
    });
  });

  it('sends templates with components, and marketing templates through marketing_messages', async () => {
    const template: TemplateMessage = {
      name: 'autumn_sale',
      language: { code: 'en_US' },
      components: [
        { type: 'header', parameters: [{ type: 'image', image: { link: 'https://cdn.example/a.jpg' } }] },
        { type: 'body', parameters: [{ type: 'text', text: 'Ada' }] },
        { type: 'button', sub_type: 'copy_code', index: 0, parameters: [{ type: 'coupon_code', coupon_code: 'AUTUMN' }] },
      ],
    };
    await provider.sendMessage(number, '4915112345678', { type: 'template', template });
    await provider.sendMessage(
      number,
      '4915112345678',
      { type: 'template', template },
      { route: 'marketing_messages', productPolicy: 'STRICT', activitySharing: false },
    );
    expect(fake.requests[0].body.template).toEqual(template);
    expect(fake.requests[1].path).toBe(`/${FAKE_PHONE_NUMBER_ID}/marketing_messages`);
    expect(fake.requests[1].body).toMatchObject({ type: 'template', product_policy: 'STRICT', message_activity_sharing: false });
  });

  it('sends interactive buttons, media by link and locations as Graph objects', async () => {
    const interactive: InteractiveButtons = {
      type: 'button',
      body: { text: 'Pick one' },
      action: { buttons: [{ type: 'reply', reply: { id: 'yes', title: 'Yes' } }] },
    };
    await provider.sendMessage(number, '4915112345678', { type: 'interactive', interactive });
    await provider.sendMessage(number, '4915112345678', { type: 'document', document: { link: 'https://cdn.example/a.pdf', filename: 'a.pdf' } });
    await provider.sendMessage(number, '4915112345678', { type: 'location', location: { latitude: 52.5, longitude: 13.4, name: 'Office' } });
    expect(fake.requests.map((r) => r.body.type)).toEqual(['interactive', 'document', 'location']);
    expect(fake.requests[0].body.interactive).toEqual(interactive);
    expect(fake.requests[1].body.document).toEqual({ link: 'https://cdn.example/a.pdf', filename: 'a.pdf' });
  });

  it('lists phone numbers across pages, in E.164', async () => {
    const numbers = await provider.listPhoneNumbers(number);
    expect(numbers.map((n) => n.displayPhoneNumber)).toEqual(['+15550100100', '+447700900123']);
    expect(numbers[0]).toMatchObject({ phoneNumberId: FAKE_PHONE_NUMBER_ID, verifiedName: 'Acme Shop', qualityRating: 'GREEN', messagingLimitTier: 'TIER_1K' });
    expect(fake.requests.map((r) => r.query.after ?? null)).toEqual([null, '1']);
  });

  it('subscribes webhooks, creates templates and reads their statuses', async () => {
    expect(await provider.subscribeWebhooks(number)).toEqual({ subscribed: true, fields: ['messages'] });
    expect(fake.requests[0]).toMatchObject({ method: 'POST', path: `/${FAKE_WABA_ID}/subscribed_apps` });

    const components = [{ type: 'BODY', text: 'Hi {{1}}', example: { body_text: [['Ada']] } }];
    const created = await provider.createTemplate(number, { name: 'welcome', language: 'en_US', category: 'UTILITY', components });
    expect(created).toMatchObject({ status: 'PENDING', category: 'UTILITY' });
    expect(fake.requests[1].body).toEqual({ name: 'welcome', language: 'en_US', category: 'UTILITY', components });

    fake.templates[0].status = 'REJECTED';
    fake.templates[0].rejected_reason = 'INVALID_FORMAT';
    const statuses = await provider.getTemplateStatuses(number, [
      { id: created.id, name: 'welcome', language: 'en_US' },
      { name: 'unknown', language: 'en' },
    ]);
    expect(statuses).toEqual([
      { id: created.id, name: 'welcome', language: 'en_US', status: 'REJECTED', category: 'UTILITY', rejectedReason: 'INVALID_FORMAT', qualityScore: null },
    ]);
  });

  it('reads the business profile, catalogs, products and marketing onboarding', async () => {
    expect(await provider.getBusinessProfile(number)).toMatchObject({ about: 'Hello from Acme', websites: ['https://acme.example'], profilePictureUrl: null });
    expect(await provider.listCatalogs(number)).toEqual([{ id: FAKE_CATALOG_ID, name: 'Acme catalog' }]);
    const products = await provider.listProducts(number, FAKE_CATALOG_ID);
    expect(products.map((p) => [p.retailerId, p.price, p.currency, p.availability])).toEqual([
      ['SKU-1', 123450, 'EUR', 'in_stock'],
      ['SKU-2', 1200, 'JPY', 'out_of_stock'],
      ['SKU-3', 1500, 'USD', 'preorder'],
    ]);
    expect(products[0].salePrice).toBeNull();
    expect(await provider.getMarketingMessagesStatus(number)).toBe('ONBOARDED');
    fake.marketingStatus = 'PENDING_INTERNAL_SETUP';
    expect(await provider.getMarketingMessagesStatus(number)).toBe('PENDING');
    fake.marketingStatus = 'INELIGIBLE_COUNTRY_NOT_SUPPORTED';
    expect(await provider.getMarketingMessagesStatus(number)).toBe('INELIGIBLE');
    fake.marketingStatus = 'ONBOARDED';
  });

  it('adds appsecret_proof when an app secret is configured', async () => {
    const signed = new CloudApiProvider({ baseUrl: fake.baseUrl, appSecret: 'app-secret' });
    await signed.listCatalogs(number);
    expect(fake.requests[0].query.appsecret_proof).toMatch(/^[0-9a-f]{64}$/);
  });

  it('converts formatted prices to minor units', () => {
    expect(toMinorUnits('$10', 'USD')).toBe(1000);
    expect(toMinorUnits('12.5 EUR', 'EUR')).toBe(1250);
    expect(toMinorUnits('1.234,56 €', 'EUR')).toBe(123456);
    expect(toMinorUnits('', 'EUR')).toBeNull();
  });
});

describe('errors', () => {
  it('131047 → 422 outside-window with the provider code', async () => {
    fake.fail('outside-window');
    const error = await failure(provider.sendMessage(number, '4915112345678', text));
    expect(error).toMatchObject({ code: 131047, httpStatus: 400 });
    const problem = error.toProblem();
    expect(problem.status).toBe(422);
    expect(problem.problem).toMatchObject({ type: 'https://chatapp.example/problems/outside-window', provider_code: 131047 });
    expect(fake.requests).toHaveLength(1);
  });

  it('131026 invalid number → 422 unprocessable naming the provider code', async () => {
    fake.fail('invalid-number');
    const problem = (await failure(provider.sendMessage(number, '4915112345678', text))).toProblem();
    expect(problem.status).toBe(422);
    expect(problem.problem).toMatchObject({ type: 'https://chatapp.example/problems/unprocessable', provider_code: 131026 });
  });

  it('a malformed recipient is refused by the provider (131009) → 422', async () => {
    const error = await failure(provider.sendMessage(number, 'not-a-number', text));
    expect(error.code).toBe(131009);
    expect(error.toProblem().status).toBe(422);
  });

  it('130429 with a long Retry-After is not waited out: 429 problem with Retry-After', async () => {
    fake.fail('rate-limit', { retryAfterSec: 30 });
    const error = await failure(provider.sendMessage(number, '4915112345678', text));
    expect(error).toMatchObject({ code: 130429, httpStatus: 429, retryAfterSec: 30 });
    const problem = error.toProblem();
    expect(problem.status).toBe(429);
    expect(problem.headers['Retry-After']).toBe('30');
    expect(problem.problem).toMatchObject({ type: 'https://chatapp.example/problems/rate-limited', provider_code: 130429 });
    expect(fake.requests).toHaveLength(1);
  });

  it('a rate-limited send is retried (the provider did not take it) when Retry-After is short', async () => {
    fake.fail('rate-limit', { retryAfterSec: 0 });
    const result = await provider.sendMessage(number, '4915112345678', text);
    expect(result.providerMessageId).toMatch(/^wamid\./);
    expect(fake.requests).toHaveLength(2);
    expect(fake.sent).toBe(1);
  });

  it('a send that hits a 5xx is not re-sent: 502 provider-error', async () => {
    fake.fail('server-error');
    const error = await failure(provider.sendMessage(number, '4915112345678', text));
    expect(error.httpStatus).toBe(500);
    expect(error.toProblem().status).toBe(502);
    expect(error.toProblem().problem.type).toBe('https://chatapp.example/problems/provider-error');
    expect(fake.requests).toHaveLength(1);
  });

  it('a send that times out is never re-sent: 504 provider-error', async () => {
    fake.fail('hang', { method: 'POST' });
    const error = await failure(provider.sendMessage(number, '4915112345678', text));
    expect(error.kind).toBe('timeout');
    expect(error.toProblem().status).toBe(504);
    expect(fake.requests).toHaveLength(1);
  });

  it('reads retry 5xx and timeouts, and recover', async () => {
    fake.fail('server-error', { method: 'GET' });
    fake.fail('hang', { method: 'GET' });
    expect(await provider.listCatalogs(number)).toHaveLength(1);
    expect(fake.requests).toHaveLength(3);
  });

  it('read retries are bounded', async () => {
    fake.fail('server-error', { method: 'GET', times: 10 });
    const error = await failure(provider.listCatalogs(number));
    expect(error.toProblem().status).toBe(502);
    expect(fake.requests).toHaveLength(3); // the first attempt and maxRetries = 2
  });

  it('190 (bad token) → 502 provider-error, not retried', async () => {
    const error = await failure(provider.listCatalogs({ wabaId: FAKE_WABA_ID, accessToken: 'wrong-token' }));
    expect(error.code).toBe(190);
    expect(error.toProblem().status).toBe(502);
    expect(error.toProblem().problem.provider_code).toBe(190);
    expect(fake.requests).toHaveLength(1);
  });

  it('a missing token fails before any request', async () => {
    const error = await failure(provider.listCatalogs({ wabaId: FAKE_WABA_ID }));
    expect(error.code).toBe(190);
    expect(fake.requests).toHaveLength(0);
  });

  it('parses Graph errors without a JSON body by HTTP status', async () => {
    fake.fail({ status: 503, headers: { 'content-type': 'text/html' } }, { method: 'POST' });
    const error = await failure(provider.sendMessage(number, '4915112345678', text));
    expect(error).toMatchObject({ httpStatus: 503, code: null });
    expect(error.toProblem().status).toBe(502);
  });

  it('an unreachable provider is a network error; a refused send may be retried because it never left', async () => {
    const port = await closedPort();
    const down = new CloudApiProvider({ baseUrl: `http://127.0.0.1:${port}/v23.0`, backoffBaseMs: 1 });
    const error = await failure(down.sendMessage(number, '4915112345678', text));
    expect(error).toMatchObject({ kind: 'network', notSent: true });
    expect(error.toProblem().status).toBe(502);
  });
});

/** A port nothing listens on: bind one, then close it. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}
