// Contacts: create, get, update. Numbers are stored in E.164 and unique per workspace (409 with
// the existing contact's id, never a constraint name); tags are given by name and created when
// new; custom field values are checked against their fields' types.
import type { Kysely, Transaction } from 'kysely';
import type { components, operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import type { Handler } from '#server/lib/handler-types.js';
import { newId } from '#server/lib/ids.js';
import { HttpProblem } from '#server/lib/problems.js';
import { prepared } from '#server/store/prepared.js';
import type { Database } from '#server/store/schema.js';
import { requireWorkspacePhone } from '../configuration/messaging-settings.js';
import { loadFieldDefinitions, mergeCustomValues } from './custom-values.js';
import { stopEnrolments } from './opt-out.js';
import { isUniqueViolation } from './storable.js';
import { ensureTags } from './tags.js';
import { CONTACT_COLUMNS, contactViews, type ContactRow } from './views.js';

type S = components['schemas'];
/** Custom field values as sent (the generated type reads the schema's `unevaluatedProperties` as "none"). */
type Values = Record<string, string | number | null>;

const notFound = (id: string) => new HttpProblem(404, 'not-found', `No contact ${id} in this workspace.`);

async function findContact(db: Kysely<Database>, workspaceId: string, id: string): Promise<ContactRow | undefined> {
  return db.selectFrom('contacts').select(CONTACT_COLUMNS).where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();
}

// A contact's creation is the hot write of imports and integrations: its two statements are
// built once (#server/store/prepared.ts).
const contactWithNumber = prepared((db, v: { workspaceId: string; phone: string }) =>
  db.selectFrom('contacts').select('id').where('workspace_id', '=', v.workspaceId).where('phone', '=', v.phone),
);
type NewContact = {
  id: string;
  workspace_id: string;
  phone: string;
  name: string | null;
  email: string | null;
  custom_fields: string;
  created_at: Date;
  updated_at: Date;
};
const insertContact = prepared((db, v: NewContact) => db.insertInto('contacts').values(v).returning(CONTACT_COLUMNS));

async function refuseTakenNumber(db: Kysely<Database>, workspaceId: string, phone: string, self?: string): Promise<void> {
  // A number belongs to at most one contact of a workspace (unique (workspace_id, phone)).
  const holder = await contactWithNumber.executeTakeFirst(db, { workspaceId, phone });
  if (holder && holder.id !== self) throw taken(phone, holder.id);
}

const taken = (phone: string, id?: string) =>
  new HttpProblem(409, 'conflict', id ? `Contact ${id} already has the number ${phone}.` : `Another contact already has the number ${phone}.`, {
    errors: [{ pointer: '/body/contact_no', detail: 'is the number of another contact' }],
  });

async function setTags(trx: Transaction<Database>, workspaceId: string, contactId: string, names: string[], now: Date): Promise<void> {
  const ids = await ensureTags(trx, workspaceId, names, now);
  await trx.deleteFrom('contact_tags').where('contact_id', '=', contactId).execute();
  if (ids.length)
    await trx
      .insertInto('contact_tags')
      .values(ids.map((tag_id) => ({ contact_id: contactId, tag_id, created_at: now })))
      .execute();
}

/** `opted_out: true` opts out (source api) unless already opted out; `false` opts back in. */
function optOutChange(optedOut: boolean | undefined, current: ContactRow, at: Date) {
  if (optedOut === true && !current.opted_out_at) return { opted_out_at: at, opt_out_source: 'api' as const };
  if (optedOut === false) return { opted_out_at: null, opt_out_source: null };
  return {};
}

/** Runs `work`, turning a unique violation of the number (a concurrent write) into the same 409. */
async function guardNumber<T>(phone: string | undefined, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (phone && isUniqueViolation(error)) throw taken(phone);
    throw error;
  }
}

export const createContact: Handler<operations['createContact']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const { store, now } = request.server.platform;
  const body = request.body;
  const phone = await requireWorkspacePhone(store.db, workspaceId, body.contact_no, '/body/contact_no');
  const db = store.db;
  const custom = body.custom_fields ? mergeCustomValues({}, body.custom_fields as Values, await loadFieldDefinitions(db, workspaceId)) : {};
  await refuseTakenNumber(db, workspaceId, phone);
  const at = now();
  const values: NewContact = {
    id: newId('ct'),
    workspace_id: workspaceId,
    phone,
    name: body.name ?? null,
    email: body.email ?? null,
    custom_fields: JSON.stringify(custom),
    created_at: at,
    updated_at: at,
  };
  // An insert with `returning` answers its row, or throws.
  const insert = async (q: Kysely<Database>) => (await insertContact.executeTakeFirst(q, values))!;
  const tags = body.tags ?? [];
  // One statement needs no transaction, and a contact created without tags has none to load.
  const row = await guardNumber(phone, () =>
    tags.length
      ? db.transaction().execute(async (trx) => {
          const created = await insert(trx);
          await setTags(trx, workspaceId, created.id, tags, at);
          return created;
        })
      : insert(db),
  );
  reply.code(201);
  return (await contactViews(db, [row], at, { tagless: !tags.length }))[0]!;
};

export const getContact: Handler<operations['getContact']> = async (request, _reply) => {
  const { workspaceId } = authOf(request);
  const { store, now } = request.server.platform;
  const row = await findContact(store.db, workspaceId, request.params.id);
  if (!row) throw notFound(request.params.id);
  return (await contactViews(store.db, [row], now()))[0]!;
};

export const updateContact: Handler<operations['updateContact']> = async (request, _reply) => {
  const { workspaceId } = authOf(request);
  const { store, now } = request.server.platform;
  const db = store.db;
  const { id } = request.params;
  const body: S['ContactUpdate'] = request.body;
  const current = await findContact(db, workspaceId, id);
  if (!current) throw notFound(id);
  const phone = body.contact_no === undefined ? undefined : await requireWorkspacePhone(db, workspaceId, body.contact_no, '/body/contact_no');
  const custom = body.custom_fields
    ? mergeCustomValues(current.custom_fields, body.custom_fields as Values, await loadFieldDefinitions(db, workspaceId))
    : undefined;
  if (phone && phone !== current.phone) await refuseTakenNumber(db, workspaceId, phone, id);
  const at = now();
  const row = await guardNumber(phone, () =>
    db.transaction().execute(async (trx) => {
      const updated = await trx
        .updateTable('contacts')
        .set({
          ...(phone !== undefined ? { phone } : {}),
          ...(body.name !== undefined ? { name: body.name } : {}),
          ...(body.email !== undefined ? { email: body.email } : {}),
          ...(custom !== undefined ? { custom_fields: JSON.stringify(custom) } : {}),
          ...optOutChange(body.opted_out, current, at),
          updated_at: at,
        })
        .where('workspace_id', '=', workspaceId)
        .where('id', '=', id)
        .returning(CONTACT_COLUMNS)
        .executeTakeFirst();
      if (!updated) throw notFound(id);
      if (body.tags !== undefined) await setTags(trx, workspaceId, id, body.tags, at);
      if (body.opted_out === true) await stopEnrolments(trx, [id], at);
      return updated;
    }),
  );
  return (await contactViews(db, [row], at))[0]!;
};
