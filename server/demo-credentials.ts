// `npm run demo:credentials`: new credentials for the demo workspace (the owner's password, the
// Messaging key, the demo Login app's key), printed once. On the embedded store the server must
// be stopped first (the store is one process's); on PostgreSQL it may run.
import { type Config, ConfigError, loadConfig } from './config.js';
import { DEMO_CREDENTIALS_COMMAND, describeDemo, reissueDemoCredentials } from './demo.js';
import { describeStartFailure, lockDataDir, prepareDataDir } from './start-checks.js';

let config: Config | undefined;

async function main(): Promise<number> {
  config = loadConfig();
  prepareDataDir(config.dataDir);
  if (!config.databaseUrl) lockDataDir(config.dataDir, "Stop it (the embedded store is one process's), run this again, then start it");
  const { buildApp } = await import('./app.js');
  const app = await buildApp({ ...config, logLevel: 'warn' });
  try {
    const demo = await reissueDemoCredentials(app);
    if (!demo) {
      console.error(
        `${DEMO_CREDENTIALS_COMMAND}: this store has no demo workspace (DEMO was off on its first start, or it had owners already). Start on an empty DATA_DIR for one.`,
      );
      return 1;
    }
    console.log(describeDemo(demo, config.publicUrl, 'New demo credentials'));
    return 0;
  } finally {
    await app.close();
  }
}

main().then(
  (code) => process.exit(code),
  (error) => {
    const line = error instanceof ConfigError ? error.message : describeStartFailure(error, config);
    console.error(line ? line.replace(/^Cannot start/, `${DEMO_CREDENTIALS_COMMAND}`) : error);
    process.exit(1);
  },
);
