// Login sessions bound to the user's phone, and the second direction, a one-time code sent to it.
// `bound_phone`: only a LOGIN from this number verifies; LOGINs from other numbers change nothing
// but `ignored_logins`. `mode = 'code'`: a code went to `bound_phone` through an authentication
// template; only its keyed digest is kept, with the wrong attempts and the sends (resend cool-down).
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    alter table login_sessions add column mode text not null default 'message';
    alter table login_sessions add column bound_phone text;
    alter table login_sessions add column ignored_logins integer not null default 0;
    alter table login_sessions add column code_digest text;
    alter table login_sessions add column code_attempts integer not null default 0;
    alter table login_sessions add column code_sends integer not null default 0;
    alter table login_sessions add column code_sent_at timestamptz;
  `,
  );
}
