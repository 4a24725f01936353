// `npm run invite -- [--email someone@example.com] [--days 7]`: an invite code for SIGNUP=invite,
// printed once (only its digest is kept). On the embedded store the server must be stopped
// first (the store is one process's); on PostgreSQL it may run.
import { parseArgs } from 'node:util';
import { type Config, ConfigError, loadConfig } from './config.js';
import { describeStartFailure, lockDataDir, prepareDataDir } from './start-checks.js';

const COMMAND = 'npm run invite';
let config: Config | undefined;

async function main(): Promise<number> {
  let values: { email?: string; days?: string };
  try {
    ({ values } = parseArgs({ options: { email: { type: 'string' }, days: { type: 'string', default: '7' } } }));
  } catch (error) {
    console.error(`${COMMAND}: ${(error as Error).message}. Usage: ${COMMAND} -- [--email someone@example.com] [--days 7]`);
    return 2;
  }
  const days = Number(values.days);
  if (!Number.isInteger(days) || days < 1 || days > 90) {
    console.error(`${COMMAND}: --days must be an integer 1-90, got "${values.days}"`);
    return 2;
  }
  if (values.email !== undefined && !/^[^\s@]+@[^\s@]+$/.test(values.email)) {
    console.error(`${COMMAND}: --email must be an email address, got "${values.email}"`);
    return 2;
  }
  config = loadConfig();
  prepareDataDir(config.dataDir);
  if (!config.databaseUrl) lockDataDir(config.dataDir, "Stop it (the embedded store is one process's), run this again, then start it");
  const { createPlatform } = await import('./platform.js');
  const { issueInvite } = await import('./apis/account/invites.js');
  const platform = await createPlatform(config);
  try {
    const invite = await issueInvite(platform, { email: values.email, days });
    const body = JSON.stringify({
      email: invite.email ?? 'you@example.com',
      password: '<12+ characters>',
      name: '<your name>',
      workspace_name: '<workspace>',
      workspace_slug: '<handle>',
      invite_code: invite.code,
    });
    console.log(`Invite code (shown once): ${invite.code}
  single use, until ${invite.expiresAt.toISOString()}${invite.email ? `, for ${invite.email} only` : ''}
  sign up      curl -X POST ${config.publicUrl}/api/account/workspaces -H 'content-type: application/json' -d '${body}'
${config.signup === 'invite' ? '' : `  note         SIGNUP is ${config.signup} here: the code is accepted only while SIGNUP=invite\n`}`);
    return 0;
  } finally {
    await platform.close();
  }
}

main().then(
  (code) => process.exit(code),
  (error) => {
    const line = error instanceof ConfigError ? error.message : describeStartFailure(error, config);
    console.error(line ? line.replace(/^Cannot start/, COMMAND) : error);
    process.exit(1);
  },
);
