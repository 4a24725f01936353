// Media uploaded from the device (POST /api/chatapp/media, multipart sends): 010's uploaded_media
// gains what the contract shows of an upload, its digest and the day the provider forgets it
// (Meta keeps uploaded media 30 days). Rows written before 016 have neither: both stay nullable.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    alter table uploaded_media add column sha256 text;
    alter table uploaded_media add column expires_at timestamptz;
    -- The sandbox looks an id up by the number it was uploaded for (sends by media id).
    create index uploaded_media_provider on uploaded_media(phone_number_id, provider_media_id);
  `,
  );
}
