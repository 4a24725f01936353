// Row types of the provider webhook's inbox (migrations 025, 042).
import type { ColumnType, Generated } from 'kysely';

type Timestamp = ColumnType<Date, Date | string, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

export interface ProviderDeliveriesTable {
  id: string;
  /** Arrival order (claims take the oldest first); never written. */
  seq: ColumnType<string, never, never>;
  /** The delivery's JSON text as validated (NUL and lone surrogates already replaced). */
  payload: string;
  received_at: Timestamp;
  /** Claimed in this order before seq (migration 042): 0 the deliveries carrying inbound messages, 1 those of statuses only. */
  lane: Generated<number>;
  attempts: Generated<number>;
  /** While leased: when the lease ends; after a failed attempt: when the next may start. */
  lease_until: NullableTimestamp;
  leased_by: string | null;
  last_error: string | null;
  /** `traceparent` of the inbound request that stored it (tracing on), for the processing span's link. */
  trace_context: string | null;
  /** Set when the last attempt failed: a poison delivery, kept with its error and never claimed again. */
  failed_at: NullableTimestamp;
}

/** A status that came before its message was recorded (migration 043). */
export interface ProviderEarlyStatusesTable {
  phone_number_id: string;
  wamid: string;
  status: string;
  /** The provider's status object as received. */
  payload: ColumnType<unknown, string, string>;
  received_at: Timestamp;
}

export interface ProviderDeliveryTables {
  provider_deliveries: ProviderDeliveriesTable;
  provider_early_statuses: ProviderEarlyStatusesTable;
}
