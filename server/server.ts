// Starts the server: reads the configuration, builds the app and listens until SIGINT/SIGTERM.
import { mkdirSync } from 'node:fs';
import { ConfigError, loadConfig } from './config.js';
import { buildApp } from './app.js';
import { describeDemo, seedDemoWorkspace } from './demo.js';
import { exitOnSignals } from './shutdown.js';
import { isUnavailable } from './store/unavailable.js';

async function main() {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(2);
    }
    throw error;
  }
  mkdirSync(config.dataDir, { recursive: true });
  const app = await buildApp(config).catch((error) => {
    if (!(error instanceof ConfigError)) throw error;
    console.error(error.message); // a wrong SECRET_KEY for this database (bad-inputs L7)
    process.exit(2);
  });
  exitOnSignals(app);
  const address = await app.listen({ port: config.port, host: config.host });
  const demo = config.demo ? await seedDemoWorkspace(app.platform) : null;
  console.log(`Listening on ${address}
  health     ${address}/healthz
  documents  ${address}/openapi/{account,connect,login,messaging}.3.1.yaml`);
  if (demo) console.log(describeDemo(demo, address));
}

main().catch((error) => {
  // An unreachable database at start (bad-inputs F-5) is an operations problem, not a crash:
  // one clear line, no stack, and a non-zero exit so that the orchestrator retries.
  if (isUnavailable(error))
    console.error(`Cannot start: the database is not reachable (${(error as Error).message}). Check DATABASE_URL and that PostgreSQL accepts connections.`);
  else console.error(error);
  process.exit(1);
});
