// Every read of a large workspace on an index (docs/scale.md): the contact list's sorts by name
// and by last inbound message (one index each serves both directions: the list reads non-null
// keys and then the nulls as two index ranges, keyset.ts), trigram indexes (pg_trgm, shipped by
// PostgreSQL and by PGlite) for the search by a fragment of a name, an email or a number's
// digits, tag filters by tag id then contact, custom-field equality through one GIN index over
// the lower-cased fields (`lower(custom_fields::text)::jsonb @> {key: value}`), and the document
// sessions CSV read in its own order instead of re-sorting every session for each page.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    create extension if not exists pg_trgm;
    create index contacts_workspace_name on contacts(workspace_id, name, id);
    create index contacts_workspace_last_inbound on contacts(workspace_id, last_inbound_at, id);
    create index contacts_name_trgm on contacts using gin (name gin_trgm_ops);
    create index contacts_email_trgm on contacts using gin (email gin_trgm_ops);
    create index contacts_phone_trgm on contacts using gin (phone gin_trgm_ops);
    create index contacts_custom_fields_lower on contacts using gin ((lower(custom_fields::text)::jsonb) jsonb_path_ops);
    create index contact_tags_tag_contact on contact_tags(tag_id, contact_id);
    drop index contact_tags_tag;
    create index reader_sessions_document_started on reader_sessions(document_id, started_at, id);
    drop index reader_sessions_document;
  `,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    create index reader_sessions_document on reader_sessions(document_id);
    drop index reader_sessions_document_started;
    create index contact_tags_tag on contact_tags(tag_id);
    drop index contact_tags_tag_contact;
    drop index contacts_custom_fields_lower, contacts_phone_trgm, contacts_email_trgm, contacts_name_trgm;
    drop index contacts_workspace_last_inbound, contacts_workspace_name;
  `,
  );
}
