// createOrderWebhook and mapOrderWebhookTemplate. The signing secret (given, as Shopify's admin
// shows one, or generated) is stored encrypted because every delivery is verified with it, and
// is returned only by the create; the view shows its last four characters.
import { isSupportedCountry } from 'libphonenumber-js/min';
import type { Kysely, Selectable } from 'kysely';
import type { components, operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import type { Handler } from '#server/lib/handler-types.js';
import { newId, newSecret } from '#server/lib/ids.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { Platform } from '#server/platform.js';
import type { Database } from '#server/store/schema.js';
import type { OrderPlatform, OrderWebhookMappingsTable, OrderWebhooksTable } from '#server/store/schema/commerce.js';
import { findAccount } from '../configuration/accounts.js';
import { findTemplate } from '../templates/lookup.js';
import { checkVariables } from './order-mapping.js';

type S = components['schemas'];
export type OrderWebhookRow = Selectable<OrderWebhooksTable>;
type MappingRow = Selectable<OrderWebhookMappingsTable>;

export const SIGNATURE_HEADERS: Record<OrderPlatform, S['OrderWebhook']['signature_header']> = {
  shopify: 'X-Shopify-Hmac-Sha256',
  woocommerce: 'X-WC-Webhook-Signature',
  custom: 'X-Webhook-Hmac-Sha256',
};

const field = (status: 400 | 404 | 422, pointer: string, detail: string, why: string) =>
  new HttpProblem(status, status === 400 ? 'validation' : status === 404 ? 'not-found' : 'unprocessable', detail, { errors: [{ pointer, detail: why }] });

export const webhookNotFound = (id: string) => new HttpProblem(404, 'not-found', `No order webhook ${id} in this workspace.`);

export async function findOrderWebhook(db: Kysely<Database>, workspaceId: string, id: string): Promise<OrderWebhookRow> {
  const row = await db.selectFrom('order_webhooks').selectAll().where('id', '=', id).where('workspace_id', '=', workspaceId).executeTakeFirst();
  if (!row) throw webhookNotFound(id);
  return row;
}

async function view(platform: Platform, row: OrderWebhookRow): Promise<S['OrderWebhook']> {
  const mappings: MappingRow[] = await platform.store.db
    .selectFrom('order_webhook_mappings')
    .selectAll()
    .where('order_webhook_id', '=', row.id)
    .orderBy('event')
    .execute();
  return {
    id: row.id,
    name: row.name,
    platform: row.platform,
    waba_id: row.business_account_id,
    phone_number_id: row.phone_number_id,
    default_country: row.default_country,
    url: `${platform.config.publicUrl.replace(/\/+$/, '')}/api/ecommerce-webhook/${row.id}/orders`,
    signature_header: SIGNATURE_HEADERS[row.platform],
    secret_last4: row.secret_last4,
    mappings: mappings.map((m) => ({
      event: m.event as S['OrderWebhookEvent'],
      template_id: m.template_id,
      language: m.language,
      variables: m.variables as S['OrderWebhookVariableMapping'][],
      enabled: m.enabled,
      updated_at: m.updated_at.toISOString(),
    })),
    last_received_at: row.last_received_at?.toISOString() ?? null,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

const createOrderWebhook: Handler<operations['createOrderWebhook']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const db = platform.store.db;
  const body = request.body;
  if (body.default_country && !isSupportedCountry(body.default_country)) {
    throw field(400, '/body/default_country', `${body.default_country} is not a country code we know.`, 'not an ISO 3166-1 alpha-2 country with phone numbers');
  }
  const account = await findAccount(db, workspaceId, body.waba_id).catch((error) => {
    if (error instanceof HttpProblem && error.status === 404)
      throw field(404, '/body/waba_id', `No business account ${body.waba_id} in this workspace.`, 'not found');
    throw error;
  });
  if (body.phone_number_id) {
    const number = await db
      .selectFrom('phone_numbers')
      .select('business_account_id')
      .where('id', '=', body.phone_number_id)
      .where('workspace_id', '=', workspaceId)
      .executeTakeFirst();
    if (!number) throw field(404, '/body/phone_number_id', `No phone number ${body.phone_number_id} in this workspace.`, 'not found');
    if (number.business_account_id !== account.id) {
      throw field(422, '/body/phone_number_id', `Phone number ${body.phone_number_id} is not a number of ${account.id}.`, 'not a number of waba_id');
    }
  }
  const secret = body.secret ?? newSecret('owhsec_');
  const now = platform.now();
  const row = await db
    .insertInto('order_webhooks')
    .values({
      id: newId('owh'),
      workspace_id: workspaceId,
      business_account_id: account.id,
      phone_number_id: body.phone_number_id ?? null,
      platform: body.platform,
      name: body.name,
      default_country: body.default_country ?? null,
      secret_enc: platform.secrets.encrypt(secret),
      secret_last4: secret.slice(-4),
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  reply.code(201);
  return { ...(await view(platform, row)), secret };
};

const mapOrderWebhookTemplate: Handler<operations['mapOrderWebhookTemplate']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const db = platform.store.db;
  const body = request.body;
  const hook = await findOrderWebhook(db, workspaceId, request.params.id);
  const variables = body.variables ?? [];
  const template = await findTemplate(db, workspaceId, { id: body.template_id });
  if (!template) throw field(404, '/body/template_id', `No template ${body.template_id} in this workspace.`, 'not found');
  if (template.business_account_id !== hook.business_account_id) {
    throw field(
      422,
      '/body/template_id',
      `Template ${template.id} belongs to another business account than the webhook's (${hook.business_account_id}).`,
      "not a template of the webhook's business account",
    );
  }
  if (template.language !== body.language) {
    throw field(
      422,
      '/body/language',
      `Template ${template.id} is in ${template.language}, not ${body.language}.`,
      `the template's language is ${template.language}`,
    );
  }
  if (template.status !== 'APPROVED') {
    throw field(422, '/body/template_id', `Template ${template.id} is ${template.status}; only APPROVED templates can be mapped.`, 'template not approved');
  }
  checkVariables(template, variables);
  const now = platform.now();
  const values = {
    template_id: template.id,
    language: template.language,
    variables: JSON.stringify(variables),
    enabled: body.enabled ?? true,
    updated_at: now,
  };
  const row = await db.transaction().execute(async (trx) => {
    await trx
      .insertInto('order_webhook_mappings')
      .values({ order_webhook_id: hook.id, event: body.event, ...values })
      .onConflict((oc) => oc.columns(['order_webhook_id', 'event']).doUpdateSet(values))
      .execute();
    return trx.updateTable('order_webhooks').set({ updated_at: now }).where('id', '=', hook.id).returningAll().executeTakeFirstOrThrow();
  });
  return view(platform, row);
};

export const orderWebhookHandlers = { createOrderWebhook, mapOrderWebhookTemplate };
