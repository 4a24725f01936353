// What inbound deliveries carry beyond the message itself: how the provider bills an outbound
// message (a status's `conversation` and `pricing`), the numbers a contact had before a
// `user_changed_number` notice, and the bytes a sandbox phone sent as media (the sandbox is the
// provider there, so it keeps what the Cloud API would keep for a media id).
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    alter table messages add column billing jsonb;
    alter table contacts add column previous_phones jsonb not null default '[]';
    create table sandbox_media (
      provider_media_id text primary key,
      phone_number_id text not null references phone_numbers(id) on delete cascade,
      mime_type text not null,
      filename text,
      bytes bytea not null,
      created_at timestamptz not null default now()
    );
  `,
  );
}
