// Starts the server: reads the configuration, builds the app and listens until SIGINT/SIGTERM.
import { mkdirSync } from 'node:fs';
import { ConfigError, loadConfig } from './config.js';
import { buildApp } from './app.js';
import { describeDemo, seedDemoWorkspace } from './demo.js';

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
  const app = await buildApp(config);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      app.log.info({ signal }, 'shutting down');
      app.close().then(() => process.exit(0), () => process.exit(1));
    });
  }
  const address = await app.listen({ port: config.port, host: config.host });
  const demo = config.demo ? await seedDemoWorkspace(app.platform) : null;
  console.log(`Listening on ${address}
  health     ${address}/healthz
  documents  ${address}/openapi/{account,connect,login,messaging}.3.1.yaml`);
  if (demo) console.log(describeDemo(demo, address));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
