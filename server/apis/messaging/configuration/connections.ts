// Connections: business accounts of the workspace. A cloud API account is connected with a
// system-user token that the provider must accept (listing the account's numbers proves it);
// the token is stored encrypted and never returned. Disconnecting keeps the rows (messages
// refer to the numbers) but drops the token and marks the numbers DISCONNECTED; connecting the
// same provider account again revives them (in another workspace: new rows, see releaseNumbers).
import { sql, type Kysely, type SqlBool } from 'kysely';
import type { components, operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import type { Handler } from '#server/lib/handler-types.js';
import { newId } from '#server/lib/ids.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { Platform } from '#server/platform.js';
import type { Database } from '#server/store/schema.js';
import { createSandboxAccount } from '#server/providers/sandbox.js';
import { ProviderError, type ProviderPhoneNumber } from '#server/providers/types.js';
import { afterCursor, orderBy, sortedPage, sortKeySelection, type SortKey } from '../contacts/keyset.js';
import { connectionView, findAccount, type AccountRow } from './accounts.js';
import { refreshOnboarding } from './marketing-sync.js';
import { applyNumbers } from './numbers-sync.js';

type S = components['schemas'];

const NEWEST: SortKey = { name: '-created_at', column: 'business_accounts.created_at', type: 'time', dir: 'desc', id: 'business_accounts.id' };

/** Connected accounts (sandbox and cloud) a workspace may have at once. */
export const MAX_CONNECTIONS = 20;

const numbersCount = sql<number>`(select count(*) from phone_numbers p where p.business_account_id = business_accounts.id and p.status <> 'DISCONNECTED')`.as(
  'numbers',
);

async function view(platform: Platform, id: string): Promise<S['Connection']> {
  const row = await platform.store.db.selectFrom('business_accounts').selectAll().select(numbersCount).where('id', '=', id).executeTakeFirstOrThrow();
  return connectionView(row, Number(row.numbers));
}

export const listConnections: Handler<operations['listConnections']> = async (request) => {
  const { workspaceId } = authOf(request);
  const { secrets, store } = request.server.platform;
  const { limit = 20, cursor }: NonNullable<operations['listConnections']['parameters']['query']> = request.query ?? {};
  const scope = { workspaceId, operation: 'listConnections' };
  const after = afterCursor(secrets, scope, NEWEST, cursor);
  let query = store.db
    .selectFrom('business_accounts')
    .selectAll()
    .select([numbersCount, sortKeySelection(NEWEST)])
    .where('workspace_id', '=', workspaceId)
    .where('disconnected_at', 'is', null);
  if (after) query = query.where(after);
  const rows = await query
    .orderBy(orderBy(NEWEST))
    .limit(limit + 1)
    .execute();
  return sortedPage(secrets, scope, NEWEST, rows, limit, (items) => items.map((r) => connectionView(r, Number(r.numbers))));
};

/** The provider's refusal of a connect attempt, pointing at the field at fault. */
function connectProblem(error: unknown): unknown {
  if (error instanceof HttpProblem) return error;
  // Not an answer of the provider (DNS, connection refused, reset): a 502, never a 500 (schemathesis finding).
  if (!(error instanceof ProviderError)) return new HttpProblem(502, 'provider-error', 'The chat provider could not be reached; try again later.');
  const code = error.code ?? undefined;
  const refused = (pointer: string, detail: string, text: string) =>
    new HttpProblem(422, 'unprocessable', text, { ...(code !== undefined ? { provider_code: code } : {}), errors: [{ pointer, detail }] });
  if (code === 190 || code === 10 || code === 200 || (code !== undefined && code >= 200 && code < 300)) {
    return refused(
      '/body/access_token',
      'refused by the provider',
      `The provider refused the access token (code ${code}): it is expired, revoked or lacks whatsapp_business_management.`,
    );
  }
  if (code === 100) {
    return refused(
      '/body/provider_waba_id',
      'not a business account this token can read',
      'The provider does not know this business account, or the token cannot read it (code 100).',
    );
  }
  return error.toProblem();
}

async function refuseOverCap(platform: Platform, workspaceId: string): Promise<void> {
  const { n } = await platform.store.db
    .selectFrom('business_accounts')
    .select((eb) => eb.fn.countAll<string | number>().as('n'))
    .where('workspace_id', '=', workspaceId)
    .where('disconnected_at', 'is', null)
    .executeTakeFirstOrThrow();
  if (Number(n) >= MAX_CONNECTIONS) {
    throw new HttpProblem(402, 'plan-limit', `A workspace can have ${MAX_CONNECTIONS} connected business accounts; disconnect one to connect another.`);
  }
}

async function connectSandbox(platform: Platform, workspaceId: string, body: S['SandboxConnectionCreate']): Promise<string> {
  const { account } = await createSandboxAccount(platform.store.db, workspaceId, { name: body.name ?? 'Sandbox' });
  await platform.store.db.updateTable('business_accounts').set({ last_synced_at: platform.now() }).where('id', '=', account.id).execute();
  await refreshOnboarding(platform, account);
  return account.id;
}

/**
 * Numbers the provider now lists under this account but that we still hold for a disconnected
 * account (of this or another workspace, connected earlier) give up their provider id, so
 * inbound messages route to the new owner. The old rows keep their messages; their provider id
 * becomes `released:<id>:<pn id>`, which matches no provider id and is never listed.
 */
async function releaseNumbers(db: Kysely<Database>, accountId: string, numbers: ProviderPhoneNumber[]): Promise<void> {
  if (!numbers.length) return;
  await db
    .updateTable('phone_numbers')
    .set({ provider_phone_number_id: sql<string>`'released:' || provider_phone_number_id || ':' || id` })
    .where(
      'provider_phone_number_id',
      'in',
      numbers.map((n) => n.phoneNumberId),
    )
    .where('business_account_id', '<>', accountId)
    .where('business_account_id', 'in', (eb) => eb.selectFrom('business_accounts').select('id').where('disconnected_at', 'is not', null))
    .execute();
}

async function connectCloud(
  platform: Platform,
  workspaceId: string,
  body: S['CloudApiConnectionCreate'],
  log: { warn: (o: object, m: string) => void },
): Promise<string> {
  const db = platform.store.db;
  const cloud = platform.provider('cloud_api');
  // A token travels in an Authorization header, which carries printable ASCII only (Meta's tokens are).
  if (!/^[!-~]+$/.test(body.access_token)) {
    throw new HttpProblem(400, 'validation', 'The access token holds characters no token has.', {
      errors: [{ pointer: '/body/access_token', detail: 'must be printable ASCII without spaces' }],
    });
  }
  const providerAccount = { wabaId: body.provider_waba_id, accessToken: body.access_token };
  let numbers: ProviderPhoneNumber[];
  try {
    numbers = await cloud.listPhoneNumbers(providerAccount);
  } catch (error) {
    throw connectProblem(error);
  }
  // Checked only after the provider accepted the token: only the account's holders learn that
  // it is connected elsewhere. A disconnected account, here or elsewhere, may be connected again.
  const existing = await db
    .selectFrom('business_accounts')
    .select(['id', 'workspace_id', 'disconnected_at'])
    .where('provider_waba_id', '=', body.provider_waba_id)
    .execute();
  const own = existing.find((r) => r.workspace_id === workspaceId);
  if (existing.some((r) => r.disconnected_at === null)) {
    throw new HttpProblem(409, 'conflict', `Business account ${body.provider_waba_id} is already connected.`, {
      errors: [{ pointer: '/body/provider_waba_id', detail: 'is already connected' }],
    });
  }
  const now = platform.now();
  const values = {
    kind: 'cloud_api' as const,
    name: body.name ?? numbers[0]?.verifiedName ?? `Business account ${body.provider_waba_id}`,
    access_token_enc: platform.secrets.encrypt(body.access_token),
    status: 'active' as const,
    webhooks_subscribed_at: null,
    last_synced_at: now,
    disconnected_at: null,
  };
  const row = await db.transaction().execute(async (trx) => {
    const account = own
      ? await trx.updateTable('business_accounts').set(values).where('id', '=', own.id).returningAll().executeTakeFirstOrThrow()
      : await trx
          .insertInto('business_accounts')
          .values({ id: newId('waba'), workspace_id: workspaceId, provider_waba_id: body.provider_waba_id, created_at: now, ...values })
          .returningAll()
          .executeTakeFirstOrThrow();
    await releaseNumbers(trx, account.id, numbers);
    await applyNumbers(trx, account, numbers, now);
    return account;
  });
  // Onboarding is informative: a failure here leaves NOT_STARTED until the next sync, not a failed connect.
  await refreshOnboarding(platform, row).catch((error) =>
    log.warn({ err: error instanceof ProviderError ? error.message : 'error', waba: row.id }, 'marketing onboarding status not fetched'),
  );
  return row.id;
}

export const createConnection: Handler<operations['createConnection']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const body = request.body;
  await refuseOverCap(platform, workspaceId);
  const id = body.kind === 'sandbox' ? await connectSandbox(platform, workspaceId, body) : await connectCloud(platform, workspaceId, body, request.log);
  reply.code(201);
  return view(platform, id);
};

async function refuseWhileSending(platform: Platform, account: AccountRow): Promise<void> {
  const sending = await platform.store.db
    .selectFrom('campaigns')
    .innerJoin('phone_numbers', 'phone_numbers.id', 'campaigns.phone_number_id')
    .select('campaigns.id')
    .where('phone_numbers.business_account_id', '=', account.id)
    .where(sql<SqlBool>`campaigns.status = 'sending'`)
    .executeTakeFirst();
  if (sending) throw new HttpProblem(409, 'conflict', `Campaign ${sending.id} is sending from this account; pause or cancel it first.`);
}

export const deleteConnection: Handler<operations['deleteConnection']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const db = platform.store.db;
  const account = await findAccount(db, workspaceId, request.params.wabaId);
  await refuseWhileSending(platform, account);
  const now = platform.now();
  await db.transaction().execute(async (trx) => {
    await trx
      .updateTable('business_accounts')
      .set({ disconnected_at: now, access_token_enc: null, webhooks_subscribed_at: null })
      .where('id', '=', account.id)
      .execute();
    await trx.updateTable('phone_numbers').set({ status: 'DISCONNECTED', updated_at: now }).where('business_account_id', '=', account.id).execute();
  });
  return reply.code(204).send();
};
