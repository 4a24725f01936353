// The send rate of a sender number, shared by every server instance: a row per number holds the
// next free send slot. A worker reserves k slots in the transaction that leases k recipients:
// the slots start at max(now, next free slot, end of a provider-imposed pause) and are spaced at
// least 1/rate apart (a little more: send-window.ts), and the row moves past them. Each send
// waits for its slot, so sends of one number never come closer than 1/rate, whichever instance
// makes them (a virtual-scheduling limiter, GCRA with a burst of one: idle time is never banked).
import { sql, type Transaction } from 'kysely';
import type { Database } from '#server/store/schema.js';

export interface Slots {
  /** Send times, one per leased recipient, in order. */
  at: Date[];
  /** When the number's next slot is free (after these). */
  nextFree: Date;
}

/** Reserves `count` slots of `phoneNumberId`, `spacingMs` apart; the caller holds the transaction. */
export async function reserveSlots(trx: Transaction<Database>, phoneNumberId: string, spacingMs: number, count: number, now: Date): Promise<Slots> {
  await trx
    .insertInto('campaign_send_slots')
    .values({ phone_number_id: phoneNumberId, next_slot_at: now })
    .onConflict((oc) => oc.column('phone_number_id').doNothing())
    .execute();
  const row = await trx
    .selectFrom('campaign_send_slots')
    .select(['next_slot_at', 'paused_until'])
    .where('phone_number_id', '=', phoneNumberId)
    .forUpdate()
    .executeTakeFirstOrThrow();
  const start = Math.max(now.getTime(), new Date(row.next_slot_at).getTime(), row.paused_until ? new Date(row.paused_until).getTime() : 0);
  const at = Array.from({ length: count }, (_, i) => new Date(start + i * spacingMs));
  const nextFree = new Date(start + count * spacingMs);
  if (count > 0) await trx.updateTable('campaign_send_slots').set({ next_slot_at: nextFree }).where('phone_number_id', '=', phoneNumberId).execute();
  return { at, nextFree };
}

/** When the number may send again, without reserving (a worker deciding whether to lease now). */
export async function nextFreeSlot(trx: Transaction<Database>, phoneNumberId: string): Promise<Date | null> {
  const row = await trx
    .selectFrom('campaign_send_slots')
    .select(['next_slot_at', 'paused_until'])
    .where('phone_number_id', '=', phoneNumberId)
    .executeTakeFirst();
  if (!row) return null;
  const t = Math.max(new Date(row.next_slot_at).getTime(), row.paused_until ? new Date(row.paused_until).getTime() : 0);
  return new Date(t);
}

/** The provider said "slow down" (bad-inputs F-8): no slot of this number before `until`, on any instance. */
export async function pauseNumber(trx: Transaction<Database> | import('kysely').Kysely<Database>, phoneNumberId: string, until: Date): Promise<void> {
  await trx
    .insertInto('campaign_send_slots')
    .values({ phone_number_id: phoneNumberId, next_slot_at: until, paused_until: until })
    .onConflict((oc) =>
      oc.column('phone_number_id').doUpdateSet({
        paused_until: sql`greatest(campaign_send_slots.paused_until, excluded.paused_until)`,
        next_slot_at: sql`greatest(campaign_send_slots.next_slot_at, excluded.next_slot_at)`,
      }),
    )
    .execute();
}
