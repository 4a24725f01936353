// One creator per kind of path id (keys as in sweep.ts `keyOf`): each makes a real resource in
// workspace `w` (through the API where that is easy, else the store) and answers its id. A path
// parameter with no entry here fails the sweep, so a new kind of resource needs a creator.
import type { FastifyInstance } from 'fastify';
import { expect } from 'vitest';
import { newId } from '#server/lib/ids.js';
import { connectBearer } from '../support/connect.js';
import { multipart, pdf } from '../unit/connect/content/support.js';
import { storeTemplate } from '../unit/messaging/inbox/support.js';
import { multipart as mediaForm } from '../unit/messaging/media/support.js';
import type { Workspace } from './support.js';

export interface Ctx {
  app: FastifyInstance;
  w: Workspace;
  /** Ids made so far for this operation, by parameter name (for nested ids). */
  ids: Record<string, string>;
}
type Creator = (ctx: Ctx) => Promise<string>;

/** Public operations: no credential of B's can be tried; the reason is their own check. */
export const PUBLIC: Record<string, string> = {
  receiveHostedLoginWebhook: 'public, authenticated by the app webhook secret signature (catalogue E, S3)',
  receiveOrderWebhook: 'public, authenticated by the shop webhook HMAC (commerce tests)',
  previewIndustryPack: 'public catalogue of packs by slug, not a workspace resource',
  getOidcConfiguration: "public by design: an app's OpenID provider metadata, the same for every caller (OpenID Connect Discovery)",
  oidcAuthorize: "public by design: the sign-in page of an app's issuer; a client_id or redirect_uri not the app's own gets the error page (catalogue O1)",
};

/**
 * Operations whose credential is bound to the path id itself: the app's own client secret or
 * access token (`/login/oidc/{appId}/…`), a client's own registration access token
 * (`/api/oauth/register/{clientId}`). B's credential on A's id is that scheme's refusal (401
 * `invalid_client` or `invalid_token`), as for any credential not of this id, and changes nothing:
 * catalogue O6 and O9 (test/security/o-oidc.test.ts, test/unit/connect/oauth/options.test.ts).
 */
export const BOUND: Record<string, string> = {
  createOidcToken: "the client is the app of the path: another app's id and key are invalid_client (O6)",
  getOidcUserInfo: "the access token is the app's of the path: another app's is invalid_token (O6)",
  getRegisteredClient: "the registration access token is the client's of the path: another's is 401 (RFC 7592 §3, O9)",
  updateRegisteredClient: "the registration access token is the client's of the path: another's is 401 (RFC 7592 §3, O9)",
  deleteRegisteredClient: "the registration access token is the client's of the path: another's is 401 (RFC 7592 §3, O9)",
};

async function created(res: { statusCode: number; body: string; json(): any }, field = 'id'): Promise<string> {
  expect(res.statusCode, res.body).toBeLessThan(300);
  return res.json()[field];
}

const rand = () => Math.random().toString(36).slice(2, 10);
const phone = () => `+4915${String(Math.floor(Math.random() * 1e9)).padStart(9, '0')}`;

const post = (ctx: Ctx, url: string, headers: Record<string, string>, payload?: unknown) =>
  ctx.app.inject({ method: 'POST', url, headers, ...(payload !== undefined ? { payload: payload as object } : {}) });

async function connectEndpoint(ctx: Ctx) {
  return created(await post(ctx, '/api/connect/webhook-endpoints', { authorization: ctx.w.connect }, { url: 'https://crm.test/hooks', enabled_events: ['*'] }));
}

async function document(ctx: Ctx) {
  const { payload, headers } = multipart({ bytes: pdf(1) });
  return created(await post(ctx, '/api/connect/documents', { authorization: ctx.w.connect, ...headers }, payload));
}

export const CREATORS: Record<string, Creator> = {
  'account:keyId': async (ctx) => created(await post(ctx, '/api/account/api-keys', { authorization: ctx.w.owner }, { name: `k-${rand()}` })),
  'connect:clientId': async (ctx) =>
    created(await post(ctx, '/api/connect/clients', { authorization: ctx.w.owner }, { name: 'CRM', redirect_uris: ['https://crm.test/cb'] }), 'client_id'),
  'connect:documentId': document,
  'connect:registration-tokens/id': async (ctx) =>
    created(await post(ctx, '/api/connect/registration-tokens', { authorization: ctx.w.owner }, { description: 'sweep' })),
  'connect:grantId': async ({ app, w }) => {
    const db = app.platform.store.db;
    const before = new Set((await db.selectFrom('connect_grants').select('id').where('workspace_id', '=', w.workspaceId).execute()).map((r) => r.id));
    await connectBearer(app, w.workspaceId);
    const rows = await db.selectFrom('connect_grants').select('id').where('workspace_id', '=', w.workspaceId).execute();
    return rows.find((r) => !before.has(r.id))!.id;
  },
  'connect:linkId': async (ctx) =>
    created(
      await post(
        ctx,
        '/api/connect/links',
        { authorization: ctx.w.connect },
        { document_id: await document(ctx), external_id: `crm-${rand()}`, recipient: { phone: '+4915112345678' } },
      ),
    ),
  'connect:endpointId': connectEndpoint,
  'connect:clientEndpointId': async (ctx) =>
    created(
      await post(ctx, '/api/connect/client/webhook-endpoints', { authorization: ctx.w.client }, { url: 'https://crm.test/hooks', enabled_events: ['*'] }),
    ),
  'connect:deliveryId': async (ctx) =>
    created(
      ctx.ids.clientEndpointId
        ? await post(ctx, `/api/connect/client/webhook-endpoints/${ctx.ids.clientEndpointId}/test`, { authorization: ctx.w.client })
        : await post(ctx, `/api/connect/webhook-endpoints/${ctx.ids.endpointId}/test`, { authorization: ctx.w.connect }),
    ),
  'login:appId': async (ctx) => created(await post(ctx, '/api/login/apps', { authorization: ctx.w.owner }, { name: `Shop ${rand()}` })),
  'login:sessionId': async (ctx) => created(await post(ctx, '/v1/auth/chatapp/start', { 'x-api-key': ctx.w.loginKey }, {}), 'sessionId'),
  'messaging:flowId': async (ctx) =>
    created(
      await post(ctx, '/api/automation', ctx.w.headers, {
        name: 'Welcome',
        waba_id: ctx.w.wabaId,
        triggers: [{ id: 'hello', type: 'message_received', parameters: {} }],
        nodes: [{ id: 'greet', type: 'send_text', parameters: { text: 'Hi!' } }],
        connections: [{ from_node: 'hello', to_node: 'greet' }],
      }),
    ),
  'messaging:campaignId': async (ctx) => {
    const name = `welcome_${rand()}`;
    await storeTemplate(ctx.app, ctx.w, { name, category: 'MARKETING', components: [{ type: 'BODY', text: 'Welcome' }] });
    const at = new Date(Date.now() + 7 * 86_400_000).toISOString();
    return created(
      await post(ctx, '/api/campaigns', ctx.w.headers, {
        name: 'Opening',
        chatapp_phone_number: ctx.w.number,
        audience: { type: 'all_contacts' },
        template: { name, language: 'en_US' },
        scheduled_at: at,
      }),
    );
  },
  'messaging:chatId': async (ctx) => {
    const contact = await CREATORS['messaging:contacts/id']!(ctx);
    const id = newId('chat');
    const now = new Date();
    await ctx.app.platform.store.db
      .insertInto('chats')
      .values({
        id,
        workspace_id: ctx.w.workspaceId,
        phone_number_id: ctx.w.pnId,
        contact_id: contact,
        last_message_id: null,
        last_message_at: now,
        assigned_owner_id: null,
        assigned_at: null,
        read_at: null,
        created_at: now,
      })
      .execute();
    return id;
  },
  // An inbound image with the bytes the sandbox phone sent (getMessageMedia), written as the
  // webhook writes it, without the automation work an inbound message starts.
  'messaging:messageId': async (ctx) => {
    const contact = await CREATORS['messaging:contacts/id']!(ctx);
    const db = ctx.app.platform.store.db;
    const mediaId = `1${String(Math.floor(Math.random() * 1e14)).padStart(14, '0')}`;
    const bytes = Buffer.from('89504e470d0a1a0a', 'hex');
    await db
      .insertInto('sandbox_media')
      .values({ provider_media_id: mediaId, phone_number_id: ctx.w.pnId, mime_type: 'image/png', filename: null, bytes })
      .execute();
    const id = newId('msg');
    await db
      .insertInto('messages')
      .values({
        id,
        workspace_id: ctx.w.workspaceId,
        phone_number_id: ctx.w.pnId,
        contact_id: contact,
        direction: 'inbound',
        type: 'image',
        content: JSON.stringify({ media: { url: null, mime_type: 'image/png', filename: null, size_bytes: null, provider_media_id: mediaId } }),
        provider_message_id: `wamid.${rand()}${rand()}`,
        status: 'received',
        error: null,
      })
      .execute();
    return id;
  },
  'messaging:wabaId': async ({ w }) => w.wabaId,
  'messaging:waba_id': async ({ w }) => w.wabaId,
  'messaging:chatbots/id': async (ctx) =>
    created(await post(ctx, '/api/chatbots', ctx.w.headers, { name: 'FAQ', waba_id: ctx.w.wabaId, fallback: { action: 'reply', text: 'Sorry?' } })),
  'messaging:contacts/id': async (ctx) => created(await post(ctx, '/api/contacts', ctx.w.headers, { name: 'Lena', contact_no: phone() })),
  'messaging:catalog_id': async (ctx) => {
    const res = await post(ctx, `/api/ecommerce-catalog/waba/${ctx.w.wabaId}/sync-catalogs`, ctx.w.headers);
    expect(res.statusCode, res.body).toBe(200);
    return res.json().catalogs[0].id;
  },
  'messaging:ecommerce-webhook/id': async (ctx) =>
    created(await post(ctx, '/api/ecommerce-webhook/create', ctx.w.headers, { platform: 'woocommerce', name: 'Shop', waba_id: ctx.w.wabaId })),
  'messaging:forms/id': async (ctx) =>
    created(
      await post(ctx, '/api/forms', ctx.w.headers, {
        name: 'Feedback',
        waba_id: ctx.w.wabaId,
        fields: [{ name: 'rating', label: 'Rating', type: 'radio', options: [{ id: 'good', title: 'Good' }] }],
      }),
    ),
  'messaging:sequenceId': async (ctx) =>
    created(
      await post(ctx, '/api/sequences', ctx.w.headers, {
        name: 'Tips',
        waba_id: ctx.w.wabaId,
        trigger: { type: 'keyword', keyword: `tip${rand()}` },
        steps: [{ delay: 10, delay_unit: 'minutes', message_type: 'text', text: 'Tip 1' }],
      }),
    ),
  'messaging:endpointId': async (ctx) =>
    created(await post(ctx, '/api/webhook-endpoints', ctx.w.headers, { url: 'https://crm.test/m', enabled_events: ['message.received'] })),
  'messaging:deliveryId': async (ctx) => created(await post(ctx, `/api/webhook-endpoints/${ctx.ids.endpointId}/test`, ctx.w.headers)),
  'messaging:slug': async () => 'dental-clinic',
  'messaging:tags/id': async (ctx) => created(await post(ctx, '/api/tags', ctx.w.headers, { name: `t${rand()}` })),
  'messaging:segments/id': async (ctx) =>
    created(
      await post(ctx, '/api/segments', ctx.w.headers, { name: `s${rand()}`, filter: { match: 'all', conditions: [{ field: 'name', operator: 'exists' }] } }),
    ),
  'messaging:custom-fields/id': async (ctx) => created(await post(ctx, '/api/custom-fields', ctx.w.headers, { key: `f${rand()}`, label: 'F', type: 'text' })),
  'messaging:templates/id': async (ctx) => (await storeTemplate(ctx.app, ctx.w, { name: `t_${rand()}`, components: [{ type: 'BODY', text: 'Hi' }] })).id,
  'messaging:imports/id': async (ctx) => {
    const form = mediaForm({}, [{ filename: 'c.csv', type: 'text/csv', bytes: Buffer.from(`contact_no\n${phone()}\n`) }]);
    return created(await post(ctx, '/api/contacts/imports', { ...ctx.w.headers, ...form.headers }, form.payload));
  },
};
