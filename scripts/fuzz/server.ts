// The server schemathesis fuzzes (scripts/fuzz.mjs starts it): the real app on 127.0.0.1 with an
// ephemeral port, its store from the environment (embedded PGlite in DATA_DIR, or DATABASE_URL),
// and one seeded workspace: credentials for every API and one real resource per path id, so
// generated requests reach the handlers instead of stopping at 401 or 404.
// Prints one JSON line (`FUZZ_READY {...}`) with the base URL and, per API, a workspace's
// credentials and ids, then serves
// until SIGTERM/SIGINT.
import { appendFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '#server/app.js';
import { loadConfig } from '#server/config.js';
import { issueOwnerToken } from '#server/auth/owner-jwt.js';
import { loginTenant } from '#test/unit/messaging/operations/support.js';
import { connectBearer, grantClient } from '#test/support/connect.js';
import { FAKE_TOKEN, FAKE_WABA_ID, FakeProvider } from '#test/fakes/fake-provider.js';
import { sendFromSandboxPhone } from '#server/apis/messaging/sandbox-phone/phone.js';
import { storeTemplate } from '#test/unit/messaging/inbox/support.js';
import { hashPassword } from '#server/lib/secrets.js';
import { codeDigest, newOneTimeCode } from '#server/apis/login/codes.js';

const PDF = Buffer.from(
  '%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj 2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj 3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n',
);

/** A 1×1 PNG: the seeded customer's inbound image (getMessageMedia needs an inbound media message). */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');

type Headers = Record<string, string>;

/** Calls the app in process; answers the parsed body, or logs the refusal and answers {} (the id stays unseeded). */
async function call(app: FastifyInstance, method: 'GET' | 'POST', url: string, headers: Headers, payload?: unknown): Promise<any> {
  const res = await app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload: payload as object }) });
  if (res.statusCode >= 300) {
    console.error(`seed: ${method} ${url} answered ${res.statusCode}: ${res.body.slice(0, 300)}`);
    return {};
  }
  return res.body ? JSON.parse(res.body) : {};
}

/** The seeded flows' graph: a message trigger joined to a text reply (scripts/fuzz/hooks.py's `_FLOW` is the same). */
const FLOW_GRAPH = {
  triggers: [{ id: 'hello', type: 'message_received', parameters: {} }],
  nodes: [{ id: 'greet', type: 'send_text', parameters: { text: 'Hi!' } }],
  connections: [{ from_node: 'hello', to_node: 'greet' }],
};
const idOf = (body: any): string | undefined => body?.id ?? body?.client_id ?? body?.data?.id;
const firstId = (list: any): string | undefined => idOf((list?.data ?? list?.items ?? [])[0]);

/**
 * An OpenID Connect Login app (on the workspace's sandbox number, a registered callback) and one
 * sign-in through its page by HTTP: its access token opens userinfo (10 minutes, as long as a
 * --ci run of one API lasts). Codes are single-use, so the token endpoint's cases are refusals.
 */
async function seedOidc(app: FastifyInstance, owner: Headers, pnId: string) {
  const created = await call(app, 'POST', '/api/login/apps', owner, {
    name: 'OIDC shop',
    use_service_phone: false,
    phone_number_id: pnId,
    oidc_redirect_uris: ['https://shop.example.com/auth/callback'],
  });
  const appId = idOf(created);
  if (!appId) return { appId: undefined, apiKey: undefined, accessToken: undefined };
  const query = new URLSearchParams({ client_id: appId, redirect_uri: 'https://shop.example.com/auth/callback', response_type: 'code', scope: 'openid phone' });
  const page = await app.inject({ url: `/login/oidc/${appId}/authorize?${query}` });
  const cookie = String([page.headers['set-cookie'] ?? []].flat()[0] ?? '').split(';')[0]!;
  const requestId = /data-request="([^"]+)"/.exec(page.body)?.[1];
  const code = /<code id="message">LOGIN ([0-9A-Z]{8})<\/code>/.exec(page.body)?.[1];
  await sendFromSandboxPhone(app, { phoneNumberId: pnId, from: '+4915112345677', text: `LOGIN ${code}` }).catch((error) =>
    console.error(`seed: OIDC LOGIN failed: ${error.message}`),
  );
  let redirect: string | undefined;
  for (let i = 0; i < 100 && !redirect; i++) {
    const res = await app.inject({
      method: 'POST',
      url: `/login/oidc/${appId}/authorize/complete`,
      headers: { 'content-type': 'application/json', cookie },
      payload: { request: requestId },
    });
    redirect = res.statusCode === 200 ? JSON.parse(res.body).redirect : undefined;
    if (!redirect) await new Promise((resolve) => setTimeout(resolve, 50)); // verification follows the inbound message's bus event
  }
  const basic = { authorization: `Basic ${Buffer.from(`${appId}:${created.api_key}`).toString('base64')}` };
  const tokens = redirect
    ? await call(app, 'POST', `/login/oidc/${appId}/token`, basic, {
        grant_type: 'authorization_code',
        code: new URL(redirect).searchParams.get('code'),
        redirect_uri: 'https://shop.example.com/auth/callback',
      })
    : {};
  if (!tokens.access_token) console.error('seed: no OIDC access token');
  return { appId, apiKey: created.api_key as string, accessToken: tokens.access_token as string | undefined };
}

/**
 * What the Account and Login operations need past their credentials (scripts/fuzz/hooks.py uses
 * `secrets`, passed as FUZZ_ACCOUNT_LOGIN): the owner's password (the fixture stores none), a key
 * for rotateApiKey of its own (revokeApiKey, which runs first, revokes the seeded one: a revoked
 * key answers rotate with 409), and two code-mode Login sessions, one for resendLoginCode (its
 * first code's 30-second cool-down already over) and one for checkLoginCode with a code we know.
 * In the Login workspace, `pool` more of each: a session sends one code per 30 s and verifies
 * once, so hooks.py gives each positive resend or check case a fresh one (else nearly every
 * resend is the documented 429, which schemathesis reports as "rate limited").
 */
async function seedAccountLogin(
  app: FastifyInstance,
  t: { ownerId: string; loginKey: string },
  owner: Headers,
  hostedWebhookSecret: string | undefined,
  pool: number,
) {
  const db = app.platform.store.db;
  const password = 'fuzz-owner-password';
  const [row] = await db
    .updateTable('owners')
    .set({ password_hash: await hashPassword(password, app.platform.passwordCost) })
    .where('id', '=', t.ownerId)
    .returning('email')
    .execute();
  const rotateKey = await call(app, 'POST', '/api/account/api-keys', owner, { name: 'fuzz rotate' });
  const loginCode = newOneTimeCode();
  // A code-mode session whose code is `loginCode` and whose first resend is allowed at once.
  const codeSession = async () => {
    const started = await call(app, 'POST', '/v1/auth/chatapp/start', { 'x-api-key': t.loginKey }, { phone: '+4915112345678', mode: 'code' });
    const id: string | undefined = started.sessionId;
    if (id)
      await db
        .updateTable('login_sessions')
        .set({ code_digest: codeDigest(app.platform, id, loginCode), code_sent_at: null })
        .where('id', '=', id)
        .execute();
    return id;
  };
  const sessions = async (n: number) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const id = await codeSession();
      if (id) ids.push(id);
    }
    return ids;
  };
  const resendSessionId = await codeSession();
  const checkSessionId = await codeSession();
  return {
    ids: { rotateKeyId: idOf(rotateKey), resendSessionId, checkSessionId },
    secrets: { email: row?.email, password, loginCode, hostedWebhookSecret, resendSessions: await sessions(pool), checkSessions: await sessions(pool) },
  };
}

async function seed(app: FastifyInstance, api: string) {
  const t = await loginTenant(app);
  const { token } = await issueOwnerToken(app.platform, { workspaceId: t.workspaceId, ownerId: t.ownerId });
  const owner = { authorization: `Bearer ${token}` };
  const connect = `Bearer ${await connectBearer(app, t.workspaceId)}`;
  const bearer = { authorization: connect };
  const key = t.headers;
  const db = app.platform.store.db;
  // The store-level fixture names the workspace after its id (`ws_…`), which WorkspaceSlug's pattern refuses.
  await db
    .updateTable('workspaces')
    .set({
      slug: `fuzz-${t.workspaceId
        .slice(3)
        .toLowerCase()
        .replace(/[^a-z0-9]/g, '')}`,
    })
    .where('id', '=', t.workspaceId)
    .execute();
  // Path ids of operations that revoke, rotate or delete point at spares, never at the resources
  // behind the credentials (the bearer's grant, the Login app of the key, the Basic client).
  const bearerGrant = await db.selectFrom('connect_grants').select('id').where('workspace_id', '=', t.workspaceId).executeTakeFirstOrThrow();
  await connectBearer(app, t.workspaceId);
  const spareGrant = await db
    .selectFrom('connect_grants')
    .select('id')
    .where('workspace_id', '=', t.workspaceId)
    .where('id', '!=', bearerGrant.id)
    .executeTakeFirst();

  const apiKey = await call(app, 'POST', '/api/account/api-keys', owner, { name: 'fuzz' });
  const client = await call(app, 'POST', '/api/connect/clients', owner, { name: 'Fuzz CRM', redirect_uris: ['https://crm.test/cb'] });
  const spareClient = await call(app, 'POST', '/api/connect/clients', owner, { name: 'Spare CRM', redirect_uris: ['https://crm.test/cb'] });
  const deletableClient = await call(app, 'POST', '/api/connect/clients', owner, { name: 'Deletable CRM', redirect_uris: ['https://crm.test/cb'] });
  const spareLoginApp = await call(app, 'POST', '/api/login/apps', owner, { name: 'Spare shop' });
  const boundary = 'fuzzboundary';
  const multipart = Buffer.concat([
    Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="fuzz.pdf"\r\ncontent-type: application/pdf\r\n\r\n`),
    PDF,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  const upload = async () => {
    const docRes = await app.inject({
      method: 'POST',
      url: '/api/connect/documents',
      headers: { ...bearer, 'content-type': `multipart/form-data; boundary=${boundary}` },
      payload: multipart,
    });
    if (docRes.statusCode >= 300) console.error(`seed: upload answered ${docRes.statusCode}: ${docRes.body.slice(0, 300)}`);
    return docRes.statusCode < 300 ? JSON.parse(docRes.body) : {};
  };
  const document = await upload();
  const spareDocument = await upload();
  const link = await call(app, 'POST', '/api/connect/links', bearer, {
    document_id: idOf(document),
    external_id: 'fuzz-1',
    recipient: { phone: '+4915112345678' },
  });
  const endpoint = await call(app, 'POST', '/api/connect/webhook-endpoints', bearer, { url: 'https://receiver.example/hook', enabled_events: ['*'] });
  await call(app, 'POST', `/api/connect/webhook-endpoints/${idOf(endpoint)}/test`, bearer, {});
  const deliveries = await call(app, 'GET', `/api/connect/webhook-endpoints/${idOf(endpoint)}/deliveries`, bearer);
  // The credential client's own (client-level) endpoint, with one delivery, and a spare for the DELETE.
  const basic = { authorization: `Basic ${Buffer.from(`${idOf(client)}:${client.client_secret}`).toString('base64')}` };
  const clientEndpoint = await call(app, 'POST', '/api/connect/client/webhook-endpoints', basic, { url: 'https://crm.test/hook', enabled_events: ['*'] });
  await call(app, 'POST', `/api/connect/client/webhook-endpoints/${idOf(clientEndpoint)}/test`, basic, {});
  const clientDeliveries = await call(app, 'GET', `/api/connect/client/webhook-endpoints/${idOf(clientEndpoint)}/deliveries`, basic);
  const spareClientEndpoint = await call(app, 'POST', '/api/connect/client/webhook-endpoints', basic, { url: 'https://crm.test/spare', enabled_events: ['*'] });
  // Refresh tokens of the credential client, each its own family (scripts/fuzz/hooks.py sends
  // them, then the ones their answers rotate to): a made-up refresh token is never valid data.
  const refreshTokens: string[] = [];
  for (let i = 0; i < 8 && idOf(client); i++) refreshTokens.push((await grantClient(app, idOf(client)!, t.workspaceId)).refresh_token);
  const session = await call(app, 'POST', '/v1/auth/chatapp/start', { 'x-api-key': t.loginKey }, {});

  // The custom fields the documents' examples use (`custom_field=city:Berlin`, `custom_fields.orders`).
  await call(app, 'POST', '/api/custom-fields', key, { key: 'city', label: 'City', type: 'text' });
  await call(app, 'POST', '/api/custom-fields', key, { key: 'orders', label: 'Orders', type: 'number' });
  const tag = await call(app, 'POST', '/api/tags', key, { name: 'vip' });
  const spareField = await call(app, 'POST', '/api/custom-fields', key, { key: 'spare_field', label: 'Spare', type: 'text' });
  // A Cloud API account on the fake provider, for setupProviderWebhooks (a sandbox account needs
  // no provider webhook: 422). One workspace only: a provider account belongs to one workspace.
  const cloud =
    api === 'messaging'
      ? await call(app, 'POST', '/api/chatapp/connections', owner, { kind: 'cloud_api', provider_waba_id: FAKE_WABA_ID, access_token: FAKE_TOKEN })
      : undefined;
  const csv = Buffer.concat([
    Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="contacts.csv"\r\ncontent-type: text/csv\r\n\r\n`),
    Buffer.from('contact_no\n+4915190000201\n'),
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  const importRes = await app.inject({
    method: 'POST',
    url: '/api/contacts/imports',
    headers: { ...key, 'content-type': `multipart/form-data; boundary=${boundary}` },
    payload: csv,
  });
  if (importRes.statusCode >= 300) console.error(`seed: import answered ${importRes.statusCode}: ${importRes.body.slice(0, 300)}`);
  const contactImport = importRes.statusCode < 300 ? JSON.parse(importRes.body) : {};
  const contact = await call(app, 'POST', '/api/contacts', key, { contact_no: '+4915112345679', name: 'Fuzz Contact' });
  const flow = await call(app, 'POST', '/api/automation', key, {
    name: 'Fuzz flow',
    waba_id: t.wabaId,
    ...FLOW_GRAPH,
  });
  const chatbot = await call(app, 'POST', '/api/chatbots', key, { name: 'Fuzz bot', waba_id: t.wabaId, fallback: { action: 'reply', text: 'Sorry?' } });
  const form = await call(app, 'POST', '/api/forms', key, {
    name: 'Feedback',
    waba_id: t.wabaId,
    fields: [
      {
        name: 'rating',
        label: 'Rating',
        type: 'radio',
        options: [
          { id: 'good', title: 'Good' },
          { id: 'bad', title: 'Bad' },
        ],
      },
    ],
  });
  const sequence = await call(app, 'POST', '/api/sequences', key, {
    name: 'Follow-up',
    waba_id: t.wabaId,
    trigger: { type: 'keyword', keyword: 'offer' },
    steps: [{ delay: 5, delay_unit: 'minutes', message_type: 'text', text: 'Hello' }],
  });
  const orderHook = await call(app, 'POST', '/api/ecommerce-webhook/create', key, { platform: 'woocommerce', name: 'Fuzz shop', waba_id: t.wabaId });
  const msgEndpoint = await call(app, 'POST', '/api/webhook-endpoints', key, {
    url: 'https://receiver.example/messaging',
    enabled_events: ['message.received'],
  });
  // Spares for the DELETE operations, which would otherwise take the seeded resource (schemathesis
  // reuses ids it saw in answers) and turn every later case on it into a 404.
  const spareContact = await call(app, 'POST', '/api/contacts', key, { contact_no: '+4915112345670', name: 'Spare Contact' });
  const spareFlow = await call(app, 'POST', '/api/automation', key, {
    name: 'Spare flow',
    waba_id: t.wabaId,
    ...FLOW_GRAPH,
  });
  const spareMsgEndpoint = await call(app, 'POST', '/api/webhook-endpoints', key, {
    url: 'https://receiver.example/spare',
    enabled_events: ['message.received'],
  });
  const spareConnection = await call(app, 'POST', '/api/chatapp/connections', owner, { kind: 'sandbox' });
  const hostedLoginApp = await call(app, 'POST', '/api/login/apps', owner, { name: 'Hosted shop', webhook_destination: 'hosted' });
  const deletableLoginApp = await call(app, 'POST', '/api/login/apps', owner, { name: 'Deletable shop' });
  const spareEndpoint = await call(app, 'POST', '/api/connect/webhook-endpoints', bearer, { url: 'https://receiver.example/spare', enabled_events: ['*'] });
  await call(app, 'POST', `/api/webhook-endpoints/${idOf(msgEndpoint)}/test`, key, {});
  const msgDeliveries = await call(app, 'GET', `/api/webhook-endpoints/${idOf(msgEndpoint)}/deliveries`, key);
  // A chat: the seeded contact writes to the sandbox number (the signed inbound path), which also
  // opens the 24-hour window for free-form sends.
  await sendFromSandboxPhone(app, { phoneNumberId: t.pnId, from: '+4915112345679', text: 'Hello' }).catch((error) =>
    console.error(`seed: inbound message failed: ${error.message}`),
  );
  const image = await sendFromSandboxPhone(app, {
    phoneNumberId: t.pnId,
    from: '+4915112345679',
    text: '',
    file: { bytes: PNG, filename: 'photo.png', declaredType: 'image/png' },
  }).catch((error) => console.error(`seed: inbound image failed: ${error.message}`));
  const chats = await call(app, 'GET', `/api/chatapp/chats?chatapp_phone_number=${encodeURIComponent(t.number)}`, key);
  // An approved template (a sandbox cannot have one approved through the API), hence a campaign.
  const template = await storeTemplate(app, t as never, { name: 'welcome_offer', components: [{ type: 'BODY', text: 'Welcome! Our new store is open.' }] });
  // A template with one body variable, for mapOrderWebhookTemplate (every variable mapped, once).
  const orderTemplate = await storeTemplate(app, t as never, { name: 'order_update', components: [{ type: 'BODY', text: 'Your order {{1}} is on its way.' }] });
  const spareTemplate = await storeTemplate(app, t as never, { name: 'spare_offer', components: [{ type: 'BODY', text: 'Spare.' }] });
  const campaign = await call(app, 'POST', '/api/campaigns', key, {
    name: 'Store opening',
    chatapp_phone_number: t.number,
    audience: { type: 'all_contacts' },
    template: { name: 'welcome_offer', language: 'en_US' },
  });
  const packs = await call(app, 'GET', '/api/industry-packs/public', key);
  const catalogs = await call(app, 'POST', `/api/ecommerce-catalog/waba/${t.wabaId}/sync-catalogs`, key, {});
  const accountLogin = await seedAccountLogin(app, t, owner, hostedLoginApp.webhook_secret, api === 'login' ? 60 : 0);
  const oidc = await seedOidc(app, owner, t.pnId);
  // Dynamic registration: an initial access token, and a client registered with it (its
  // registration access token for the RFC 7592 operations; a spare for their DELETE).
  const initialToken = await call(app, 'POST', '/api/connect/registration-tokens', owner, { description: 'Fuzz platform' });
  const spareInitialToken = await call(app, 'POST', '/api/connect/registration-tokens', owner, { description: 'Spare' });
  const registered = await call(
    app,
    'POST',
    '/api/oauth/register',
    { authorization: `Bearer ${initialToken.token}` },
    { redirect_uris: ['https://crm.test/cb'], client_name: 'Registered' },
  );

  return {
    credentials: {
      owner: owner.authorization,
      connect,
      messagingKey: t.key,
      loginKey: t.loginKey,
      clientId: idOf(client),
      clientSecret: client.client_secret,
      subscribeToken: session.subscribeToken ?? session.subscribe_token,
      oidcAppId: oidc.appId,
      oidcSecret: oidc.apiKey,
      oidcAccessToken: oidc.accessToken,
      initialToken: initialToken.token,
      registrationToken: registered.registration_access_token,
    },
    ids: {
      keyId: idOf(apiKey),
      clientId: idOf(spareClient),
      documentId: idOf(document),
      grantId: spareGrant?.id,
      linkId: idOf(link),
      endpointId: idOf(endpoint),
      deliveryId: firstId(deliveries),
      clientEndpointId: idOf(clientEndpoint),
      clientDeliveryId: firstId(clientDeliveries),
      appId: idOf(spareLoginApp) ?? spareLoginApp?.app_id,
      hostedAppId: idOf(hostedLoginApp) ?? hostedLoginApp?.app_id,
      oidcAppId: oidc.appId,
      registeredClientId: registered.client_id,
      sessionId: session.sessionId ?? session.session_id ?? idOf(session),
      contactId: idOf(contact),
      importId: idOf(contactImport),
      flowId: idOf(flow),
      chatbotId: idOf(chatbot),
      formId: idOf(form),
      sequenceId: idOf(sequence),
      orderWebhookId: idOf(orderHook),
      messagingEndpointId: idOf(msgEndpoint),
      messagingDeliveryId: firstId(msgDeliveries),
      chatId: firstId(chats),
      campaignId: idOf(campaign),
      wabaId: t.wabaId,
      cloudWabaId: idOf(cloud),
      slug: (packs?.data ?? packs?.items ?? packs ?? [])[0]?.slug,
      catalogId: firstId(catalogs) ?? (catalogs?.catalogs ?? [])[0]?.id,
      ...accountLogin.ids,
      messageId: image?.messageId,
    },
    // What signs or completes the Messaging API's provider and order webhooks in positive cases
    // (scripts/fuzz/hooks.py): the provider's app secret and verify token, the order webhook's secret.
    signing: {
      provider_app_secret: app.platform.providerAppSecret,
      provider_verify_token: app.platform.providerVerifyToken,
      order_webhook_secret: orderHook.secret,
    },
    // Sign-in, signing and code values of the Account and Login hooks (scripts/fuzz/hooks.py).
    accountLogin: { ...accountLogin.secrets, oidcAppId: oidc.appId, oidcRedirectUri: 'https://shop.example.com/auth/callback' },
    // Body and query fields that name a workspace's resource, set in positive cases (scripts/fuzz/hooks.py).
    fields: {
      waba_id: t.wabaId,
      phone_number_id: t.pnId,
      chatapp_phone_number: t.number,
      contact_id: idOf(contact),
      document_id: idOf(document),
      chat_id: firstId(chats),
      template_id: template.id,
      tag_id: idOf(tag),
      // Values for one operation's positive cases (business rules JSON Schema cannot state):
      // a free-form send needs a contact with an open 24-hour window (the seeded one wrote in),
      // a reply or reaction a message of that chat, a template send an approved template.
      operations: {
        sendMessage: {
          contact_no: '+4915112345679',
          reply_to: image?.messageId,
          message_id: image?.messageId,
          template: { name: 'welcome_offer', language: 'en_US' },
        },
        createCampaign: { template: { name: 'welcome_offer', language: 'en_US' } },
        // An IANA time zone (the contract says so in words; no pattern can).
        createMessageBot: { 'schedule.timezone': 'Europe/Berlin' },
        mapOrderWebhookTemplate: { template_id: orderTemplate.id, language: 'en_US' },
      },
    },
    // What positive Connect OAuth cases need (scripts/fuzz/hooks.py): the client behind
    // OAuthClientBasic, its registered redirect URI, refresh tokens; and the seeded link's phone.
    connect: {
      client_id: idOf(client),
      redirect_uri: 'https://crm.test/cb',
      refresh_tokens: refreshTokens,
      phone: '+4915112345678',
    },
    // Path ids of the DELETE operations, by path prefix.
    spares: {
      '/api/contacts/': idOf(spareContact),
      '/api/custom-fields/': idOf(spareField),
      '/api/templates/': spareTemplate.id,
      '/api/automation/': idOf(spareFlow),
      '/api/webhook-endpoints/': idOf(spareMsgEndpoint),
      '/api/chatapp/connections/': idOf(spareConnection),
      '/api/connect/webhook-endpoints/': idOf(spareEndpoint),
      '/api/connect/client/webhook-endpoints/': idOf(spareClientEndpoint),
      // The client operations' own spare stays: a deleted one made the stateful phase's check that
      // a client just created can be read or changed get the pinned id's 404.
      '/api/connect/clients/': idOf(deletableClient),
      '/api/connect/documents/': idOf(spareDocument),
      '/api/login/apps/': idOf(deletableLoginApp) ?? deletableLoginApp?.app_id,
      '/api/connect/registration-tokens/': idOf(spareInitialToken),
    },
  };
}

async function main() {
  // Cloud API connections go to the fake provider on 127.0.0.1 (no real Graph API here): a
  // generated access token is then refused as Meta refuses it, instead of the provider being
  // unreachable (502, which the fuzz rightly counts as a server error).
  const fake = await new FakeProvider().start();
  const config = loadConfig({
    AUTH_FAILURES_PER_IP: '1000000',
    ...process.env,
    PORT: '0',
    HOST: '127.0.0.1',
    DEMO: 'false',
    GRAPH_API_URL: fake.baseUrl,
    // A Google OAuth client, so getGoogleConnectUrl builds its URL instead of answering 422.
    GOOGLE_CLIENT_ID: '401234567890-fuzz.apps.googleusercontent.com',
    GOOGLE_REDIRECT_URI: 'https://api.chatapp.example/api/google/callback',
  });
  // Outbound URLs (webhook endpoints, media) resolve no name: the URL checks take a name that
  // does not resolve as one that may later, and deliveries record a DNS failure, at once. The
  // real resolver made the fuzz depend on the network, and one that drops queries under load held
  // URL checks 5 or 10 s (schemathesis's response-time check failed on them). IP literals are
  // still checked by the policy.
  const lookup = async (hostname: string): Promise<never> => {
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND', hostname });
  };
  const app = await buildApp(config, { lookup });
  const stop = () => app.close().then(() => fake.stop());
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () =>
      stop().then(
        () => process.exit(0),
        () => process.exit(1),
      ),
    );
  // Every answer to the fuzzer (seeding goes through inject, not the socket), one line each in
  // FUZZ_TALLY: scripts/fuzz.mjs reads the share of 2xx per operation from it.
  const tally = process.env.FUZZ_TALLY;
  if (tally)
    app.server.on('request', (req, res) =>
      res.once('finish', () => appendFileSync(tally, `${req.method} ${(req.url ?? '').split('?')[0]} ${res.statusCode}\n`)),
    );
  // The body of every 4xx answer, one line each in FUZZ_REFUSALS: what an operation near 0% 2xx
  // refuses (docs/fuzzing.md).
  const refusals = process.env.FUZZ_REFUSALS;
  if (refusals)
    app.server.on('request', (req, res) => {
      const end = res.end.bind(res) as (...args: unknown[]) => typeof res;
      res.end = ((chunk?: unknown, ...rest: unknown[]) => {
        if (res.statusCode >= 400 && res.statusCode < 500 && chunk)
          appendFileSync(refusals, `${req.method} ${(req.url ?? '').split('?')[0]} ${res.statusCode} ${String(chunk).slice(0, 2000).replace(/\n/g, ' ')}\n`);
        return end(chunk, ...rest);
      }) as typeof res.end;
    });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  // One workspace per API: a run that revokes or deletes what it may (keys, grants, apps) cannot
  // take the credentials of the next API's run with it.
  const workspaces: Record<string, Awaited<ReturnType<typeof seed>>> = {};
  for (const api of ['account', 'connect', 'login', 'messaging']) workspaces[api] = await seed(app, api);
  console.log(`FUZZ_READY ${JSON.stringify({ url, workspaces })}`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
