// What the provider reports about a customer or a sent message rather than a customer's words:
// a number change (`system` / `user_changed_number`) moves the contact to its new number and
// keeps the old one in its history; a status's `conversation` and `pricing` say how a sent
// message is billed.
import type { FastifyBaseLogger } from 'fastify';
import { sql, type Transaction } from 'kysely';
import type { components } from '#generated/messaging/types.js';
import type { Database } from '#server/store/schema.js';
import type { MessageBilling } from '#server/store/schema/inbound.js';
import { WA_ID } from '#server/lib/phone.js';

type S = components['schemas'];
type ContactRef = { id: string; name: string | null; phone: string; last_inbound_at: Date | null };

/**
 * With `user_changed_number`, the contact (found by the old number the notice comes from) takes
 * the new one; the old number goes to `previous_phones`. If the workspace already has a contact
 * with the new number, both are left as they are (merging two contacts is a person's decision).
 */
export async function applyNumberChange(
  trx: Transaction<Database>,
  log: FastifyBaseLogger,
  contact: ContactRef,
  notice: S['ProviderSystemNotice'],
  at: Date,
): Promise<ContactRef> {
  if (notice.type !== 'user_changed_number' || !notice.wa_id || !WA_ID.test(notice.wa_id)) return contact;
  const phone = `+${notice.wa_id}`;
  if (phone === contact.phone) return contact;
  const entry = JSON.stringify([{ phone: contact.phone, changed_at: at.toISOString() }]);
  const moved = await trx
    .updateTable('contacts')
    .set({ phone, previous_phones: sql`previous_phones || ${entry}::jsonb`, updated_at: at })
    .where('id', '=', contact.id)
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('contacts as other').select('other.id').whereRef('other.workspace_id', '=', 'contacts.workspace_id').where('other.phone', '=', phone),
        ),
      ),
    )
    .returning(['id', 'name', 'phone', 'last_inbound_at'])
    .executeTakeFirst();
  if (!moved) log.info({ contactId: contact.id }, 'provider webhook: number change to a number another contact has; contacts left as they are');
  return moved ?? contact;
}

/** A status's billing in the contract's shape; undefined when it carries none. */
export function billingOf(s: S['ProviderStatus']): MessageBilling | undefined {
  const out: MessageBilling = {};
  const c = s.conversation;
  if (c) {
    const seconds = Number(c.expiration_timestamp);
    out.conversation = {
      id: c.id ?? null,
      origin_type: c.origin?.type ?? null,
      expires_at: c.expiration_timestamp && Number.isFinite(seconds) && seconds > 0 ? new Date(seconds * 1000).toISOString() : null,
    };
  }
  const p = s.pricing;
  if (p) {
    out.pricing = {
      billable: typeof p.billable === 'boolean' ? p.billable : null,
      pricing_model: p.pricing_model ?? null,
      category: p.category ?? null,
      type: p.type ?? null,
    };
  }
  return out.conversation || out.pricing ? out : undefined;
}
