// Outbound webhook endpoints of Connect and Messaging. Signing secrets must be readable to sign,
// so they are encrypted at rest (SecretBox, AES-256-GCM); during a rotation the previous secret
// keeps signing until `previous_secret_expires_at`. `secret_prefix` (the first 12 characters,
// 6 of them random) lets owners tell secrets apart without decrypting.
//
// A redelivery is a new outbox row of the same event and body. The outbox keeps one row per
// (event_id, endpoint_id), so a redelivery row carries `<event id>/<random>` in `event_id`;
// `webhook_redeliveries` records the row it repeats and its true event id.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    create table webhook_endpoints (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      api text not null,
      url text not null,
      description text,
      event_types text[] not null,
      status text not null default 'enabled',
      api_version text not null default '2026-11-01',
      secret_enc text not null,
      secret_prefix text not null default '',
      previous_secret_enc text,
      previous_secret_expires_at timestamptz,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );
    create index webhook_endpoints_workspace on webhook_endpoints(workspace_id, api, created_at desc);

    create table webhook_redeliveries (
      outbox_id text primary key references outbox(id) on delete cascade,
      workspace_id text not null references workspaces(id) on delete cascade,
      event_id text not null,
      redelivery_of text not null
    );
  `,
  );
}
