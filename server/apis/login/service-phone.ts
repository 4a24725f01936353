// Which number a Login app's users message: the platform's shared service number, or one of the
// workspace's own connected numbers. Used by the Login-app operations (validation, the displayed
// number, provider webhook set-up) and by session start (`resolveLoginNumber`).
import { randomInt } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Kysely, Selectable } from 'kysely';
import type { Config } from '#server/config.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { Platform } from '#server/platform.js';
import { addSandboxNumber } from '#server/providers/sandbox.js';
import type { Database, LoginAppsTable, PhoneNumbersTable } from '#server/store/schema.js';

/** A phone_numbers row with the kind of its business account. */
export type LoginNumber = Selectable<PhoneNumbersTable> & { provider_kind: 'sandbox' | 'cloud_api' };

/** Statuses in which a number still receives messages (PENDING, RESTRICTED, DISCONNECTED do not count). */
export const ACTIVE_NUMBER_STATUSES = ['CONNECTED', 'FLAGGED'];

// The service workspace is found by a fixed id, never by its slug: anyone may sign up with the
// slug `platform-service`, and the shared number must never land in a user's workspace.
export const SERVICE_WORKSPACE_ID = 'ws_PlatformService';
const SERVICE_SLUG = 'platform-service';

export const isActiveNumber = (n: { status: string }) => ACTIVE_NUMBER_STATUSES.includes(n.status);

function numbers(db: Kysely<Database>) {
  return db
    .selectFrom('phone_numbers as pn')
    .innerJoin('business_accounts as ba', 'ba.id', 'pn.business_account_id')
    .selectAll('pn')
    .select('ba.kind as provider_kind');
}

/** A number of `workspaceId` by id (any status), or undefined: another workspace's is unknown here. */
export async function findOwnNumber(db: Kysely<Database>, workspaceId: string, id: string): Promise<LoginNumber | undefined> {
  return numbers(db).where('pn.id', '=', id).where('pn.workspace_id', '=', workspaceId).executeTakeFirst();
}

/** The workspace's primary active cloud-API number (the oldest), the own-number default. */
export async function primaryOwnNumber(db: Kysely<Database>, workspaceId: string): Promise<LoginNumber | undefined> {
  return numbers(db)
    .where('pn.workspace_id', '=', workspaceId)
    .where('ba.kind', '=', 'cloud_api')
    .where('pn.status', 'in', ACTIVE_NUMBER_STATUSES)
    .orderBy('pn.created_at')
    .orderBy('pn.id')
    .executeTakeFirst();
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The shared service number of this instance (made by startLogin). */
    loginServiceNumber: ServiceNumber;
  }
}

/**
 * The shared service number: LOGIN_SERVICE_PHONE_NUMBER_ID when configured (a Cloud API number
 * of the operator), else a sandbox number in the platform-owned workspace, created on first use.
 * One promise per instance; across instances the workspace row lock makes creation happen once.
 */
export class ServiceNumber {
  private pending?: Promise<LoginNumber>;

  constructor(private readonly platform: Platform) {}

  get(): Promise<LoginNumber> {
    if (!this.pending) {
      this.pending = loadServiceNumber(this.platform);
      this.pending.catch(() => (this.pending = undefined)); // a failure is retried on the next call
    }
    return this.pending;
  }
}

/**
 * In production a shared service number is an operator's Cloud API number
 * (LOGIN_SERVICE_PHONE_NUMBER_ID): a sandbox number would reach no real phone. Without one (and
 * without DEMO) the service number is refused with this problem rather than made up (docs/deploy.md).
 */
export function serviceNumberUnset(config: Config, pointer?: string): HttpProblem | undefined {
  // DEMO on in production is a deliberate demo deployment, whose sandbox numbers stand in for real ones.
  if (!config.production || config.demo || config.loginServicePhoneNumberId) return undefined;
  return new HttpProblem(
    422,
    'unprocessable',
    'This server has no shared service number (LOGIN_SERVICE_PHONE_NUMBER_ID is not set): send use_service_phone false and use a number of your own.',
    pointer ? { errors: [{ pointer, detail: 'no shared service number on this server' }] } : {},
  );
}

async function loadServiceNumber(platform: Platform): Promise<LoginNumber> {
  const { db } = platform.store;
  const unset = serviceNumberUnset(platform.config);
  if (unset) throw unset;
  const configured = platform.config.loginServicePhoneNumberId;
  if (configured) {
    const row = await numbers(db).where('pn.id', '=', configured).executeTakeFirst();
    if (!row) throw new HttpProblem(503, 'unavailable', 'The shared service number is not connected yet.');
    return row;
  }
  const first = () => numbers(db).where('pn.workspace_id', '=', SERVICE_WORKSPACE_ID).orderBy('pn.created_at').orderBy('pn.id');
  const existing = await first().executeTakeFirst();
  if (existing) return existing;
  await db
    .insertInto('workspaces')
    .values({ id: SERVICE_WORKSPACE_ID, name: 'Service', slug: SERVICE_SLUG, created_at: platform.now() })
    .onConflict((oc) => oc.doNothing())
    .execute();
  await db.transaction().execute(async (trx) => {
    // Serialises creators on every instance; the loser then sees the winner's number.
    const ws = await trx.selectFrom('workspaces').select('id').where('id', '=', SERVICE_WORKSPACE_ID).forUpdate().executeTakeFirst();
    if (!ws) throw new Error(`workspace slug ${SERVICE_SLUG} is taken by another workspace; set LOGIN_SERVICE_PHONE_NUMBER_ID`);
    const has = await trx.selectFrom('phone_numbers').select('id').where('workspace_id', '=', SERVICE_WORKSPACE_ID).executeTakeFirst();
    if (has) return;
    const account = await trx
      .insertInto('business_accounts')
      .values({
        id: `waba_PlatformService`,
        workspace_id: SERVICE_WORKSPACE_ID,
        kind: 'sandbox',
        provider_waba_id: String(randomInt(1e14, 2 ** 48 - 1)),
        name: 'Service',
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await addSandboxNumber(trx, account);
  });
  return (await first().executeTakeFirst())!;
}

const validation = (detail: string, pointers: string[], why: string) =>
  new HttpProblem(400, 'validation', detail, { errors: pointers.map((pointer) => ({ pointer, detail: why })) });

export const unknownNumber = (id: string) => new HttpProblem(404, 'not-found', `No connected phone number ${id} in this workspace.`);

export const inactiveNumber = (n: LoginNumber, pointer = '/body/phone_number_id') =>
  new HttpProblem(422, 'unprocessable', `Phone number ${n.id} is ${n.status}, not active.`, { errors: [{ pointer, detail: 'is not an active number' }] });

/**
 * The number a new login session uses, per the contract of start: `phone_number_id` if sent,
 * the service number if `use_service_phone` is true, the own number if false, else the app's
 * default. Both fields: 400 naming both; unknown or another workspace's number: 404; an
 * inactive one, or no usable own number: 422.
 */
export async function resolveLoginNumber(
  server: FastifyInstance,
  app: Pick<Selectable<LoginAppsTable>, 'workspace_id' | 'use_service_phone' | 'phone_number_id'>,
  choice: { phone_number_id?: string; use_service_phone?: boolean } = {},
): Promise<LoginNumber> {
  const { db } = server.platform.store;
  if (choice.phone_number_id !== undefined && choice.use_service_phone !== undefined) {
    throw validation(
      'phone_number_id and use_service_phone are mutually exclusive.',
      ['/body/phone_number_id', '/body/use_service_phone'],
      'send only one of phone_number_id and use_service_phone',
    );
  }
  if (choice.phone_number_id !== undefined) {
    const own = await findOwnNumber(db, app.workspace_id, choice.phone_number_id);
    if (!own) throw unknownNumber(choice.phone_number_id);
    if (!isActiveNumber(own)) throw inactiveNumber(own);
    return own;
  }
  if (choice.use_service_phone ?? app.use_service_phone) {
    const service = await server.loginServiceNumber.get();
    if (!isActiveNumber(service)) throw new HttpProblem(422, 'unprocessable', 'The shared service number is not active at the moment; try again later.');
    return service;
  }
  const own = app.phone_number_id ? await findOwnNumber(db, app.workspace_id, app.phone_number_id) : await primaryOwnNumber(db, app.workspace_id);
  if (!own || !isActiveNumber(own)) {
    throw new HttpProblem(
      422,
      'unprocessable',
      'The Login app has no usable own number: connect an active cloud-API number, name one, or use the service number.',
    );
  }
  return own;
}
