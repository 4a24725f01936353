// Migration 003 gave `login_apps.provider_webhook_status` the default 'not_needed', which is not a
// ProviderWebhookSetupStatus (the contract says 'not_required'). The API always wrote a valid value,
// but a row made without one (a fixture, a manual insert) answered outside the contract. The default
// now matches, old rows are corrected, and a check keeps the column inside the enum.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    update login_apps set provider_webhook_status = 'not_required' where provider_webhook_status = 'not_needed';
    alter table login_apps alter column provider_webhook_status set default 'not_required';
    alter table login_apps add constraint login_apps_provider_webhook_status_check
      check (provider_webhook_status in ('not_required', 'pending', 'active', 'failed'));
  `,
  );
}
