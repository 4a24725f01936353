// Runs the migrations in order at start; the same files serve PGlite and PostgreSQL.
import { Migrator, sql, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import * as m001 from './migrations/001_platform.js';
import * as m002 from './migrations/002_sign_in.js';
import * as m003 from './migrations/003_login.js';
import * as m004 from './migrations/004_login_keys.js';
import * as m005 from './migrations/005_demo.js';
import * as m006 from './migrations/006_connect_oauth.js';
import * as m007 from './migrations/007_connect_content.js';
import * as m008 from './migrations/008_webhook_endpoints.js';
import * as m009 from './migrations/009_messaging_crm.js';
import * as m010 from './migrations/010_messaging_inbox.js';
import * as m011 from './migrations/011_campaigns.js';
import * as m012 from './migrations/012_commerce.js';
import * as m013 from './migrations/013_automation.js';
import * as m014 from './migrations/014_bots_forms.js';
import * as m015 from './migrations/015_packs_operations.js';
import * as m016 from './migrations/016_media.js';
import * as m017 from './migrations/017_contact_times.js';
import * as m018 from './migrations/018_platform_settings.js';
import * as m019 from './migrations/019_login_setup_status.js';
import * as m020 from './migrations/020_subscribe_token_index.js';
import * as m021 from './migrations/021_outbox_fillfactor.js';
import * as m022 from './migrations/022_connect_token_parent.js';
import * as m023 from './migrations/023_retired_credentials.js';
import * as m024 from './migrations/024_automation_inbound_due.js';
import * as m025 from './migrations/025_provider_deliveries.js';
import * as m026 from './migrations/026_signup_invites.js';
import * as m027 from './migrations/027_inbound_fidelity.js';
import * as m028 from './migrations/028_message_campaign.js';
import * as m029 from './migrations/029_login_phone_codes.js';
import * as m030 from './migrations/030_contact_erasure_import_opt_out.js';
import * as m031 from './migrations/031_phone_verified_links.js';
import * as m032 from './migrations/032_client_webhook_endpoints.js';
import * as m033 from './migrations/033_document_versions.js';
import * as m034 from './migrations/034_messaging_settings.js';
import * as m035 from './migrations/035_messaging_settings_country.js';
import * as m036 from './migrations/036_opt_out_priority_history.js';
import * as m037 from './migrations/037_scale_indexes.js';
import * as m037b from './migrations/037b_campaign_preparation.js';
import * as m037c from './migrations/037c_cached_counts.js';
import * as m039 from './migrations/039_trace_context.js';
import * as m041 from './migrations/041_login_oidc.js';
import * as m041b from './migrations/041b_connect_oauth_options.js';
import * as m042 from './migrations/042_provider_inbox_lanes.js';
import * as m043 from './migrations/043_early_statuses.js';
import * as m044 from './migrations/044_reading_rollups.js';
import * as m045 from './migrations/045_contact_references.js';

const MIGRATIONS: Record<string, Migration> = {
  '001_platform': m001,
  '002_sign_in': m002,
  '003_login': m003,
  '004_login_keys': m004,
  '005_demo': m005,
  '006_connect_oauth': m006,
  '007_connect_content': m007,
  '008_webhook_endpoints': m008,
  '009_messaging_crm': m009,
  '010_messaging_inbox': m010,
  '011_campaigns': m011,
  '012_commerce': m012,
  '013_automation': m013,
  '014_bots_forms': m014,
  '015_packs_operations': m015,
  '016_media': m016,
  '017_contact_times': m017,
  '018_platform_settings': m018,
  '019_login_setup_status': m019,
  '020_subscribe_token_index': m020,
  '021_outbox_fillfactor': m021,
  '022_connect_token_parent': m022,
  '023_retired_credentials': m023,
  '024_automation_inbound_due': m024,
  '025_provider_deliveries': m025,
  '026_signup_invites': m026,
  '027_inbound_fidelity': m027,
  '028_message_campaign': m028,
  '029_login_phone_codes': m029,
  '030_contact_erasure_import_opt_out': m030,
  '031_phone_verified_links': m031,
  '032_client_webhook_endpoints': m032,
  '033_document_versions': m033,
  '034_messaging_settings': m034,
  '035_messaging_settings_country': m035,
  '036_opt_out_priority_history': m036,
  '037_scale_indexes': m037,
  '037b_campaign_preparation': m037b,
  '037c_cached_counts': m037c,
  '039_trace_context': m039,
  '041_login_oidc': m041,
  '041b_connect_oauth_options': m041b,
  '042_provider_inbox_lanes': m042,
  '043_early_statuses': m043,
  '044_reading_rollups': m044,
  '045_contact_references': m045,
};

class StaticProvider implements MigrationProvider {
  async getMigrations() {
    return MIGRATIONS;
  }
}

export async function migrateToLatest(db: Kysely<any>): Promise<void> {
  const migrator = new Migrator({ db, provider: new StaticProvider() });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    throw new Error(`migration ${failed?.migrationName ?? ''} failed: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** The last migration this code knows: the schema it needs. */
export const LATEST_MIGRATION = Object.keys(MIGRATIONS).sort().at(-1)!;

/**
 * Resolves when the database holds every migration this code needs (readiness, server/ops/readiness.ts);
 * rejects while they are pending, for example while another instance is still running them.
 */
export async function checkMigrated(db: Kysely<any>): Promise<void> {
  const { rows } = await sql<{ name: string }>`select name from kysely_migration where name = ${LATEST_MIGRATION}`.execute(db);
  if (!rows.length) throw new Error(`migration ${LATEST_MIGRATION} is not applied yet`);
}
