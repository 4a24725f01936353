// Row types of migration 027: billing of outbound messages, previous numbers of contacts, the
// sandbox phone's media bytes.
import type { ColumnType } from 'kysely';

/** A status's `conversation` and `pricing` as the provider reported them (jsonb). */
export interface MessageBilling {
  conversation?: { id: string | null; origin_type: string | null; expires_at: string | null };
  pricing?: { billable: boolean | null; pricing_model: string | null; category: string | null; type: string | null };
}

/** A number a contact had, and when the provider said it changed. */
export interface PreviousPhone {
  phone: string;
  changed_at: string;
}

export interface SandboxMediaTable {
  provider_media_id: string;
  phone_number_id: string;
  mime_type: string;
  filename: string | null;
  bytes: Uint8Array;
  created_at: ColumnType<Date, Date | string | undefined, never>;
}

export interface InboundTables {
  sandbox_media: SandboxMediaTable;
}

declare module '../schema.js' {
  interface MessagesTable {
    billing: ColumnType<MessageBilling | null, string | null | undefined, string | null>;
  }
  interface ContactsTable {
    previous_phones: ColumnType<PreviousPhone[], string | undefined, string>;
  }
}
