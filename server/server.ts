// Starts the server: reads the configuration, checks DATA_DIR and the port, builds the app and
// listens until SIGINT/SIGTERM. A start that cannot succeed says why in one line
// (./start-checks.ts) and exits non-zero: 2 for settings, 1 for everything else.
import type { FastifyInstance } from 'fastify';
import { type Config, ConfigError, loadConfig } from './config.js';
import { demoWorkspaceId, describeDemo, describeExistingDemo, seedDemoWorkspace, serviceNumberOf } from './demo.js';
import { exitOnSignals } from './shutdown.js';
import { checkPort, describeStartFailure, listenFailure, lockDataDir, prepareDataDir } from './start-checks.js';
import { isUnavailable } from './store/unavailable.js';
import { startTracing } from './ops/tracing.js';
import { logProcessWarnings } from './ops/logging.js';

let config: Config | undefined;

async function main() {
  config = loadConfig();
  prepareDataDir(config.dataDir);
  if (!config.databaseUrl) lockDataDir(config.dataDir);
  await checkPort(config.host, config.port); // before the app is built: a taken port is said at once
  // Tracing (OTEL_*, off by default) starts first: the app's modules are instrumented as they load.
  const stopTracing = await startTracing();
  // The app's modules load after the checks, so that a bad start answers without waiting for them.
  const { buildApp } = await import('./app.js');
  const app = await buildApp(config);
  logProcessWarnings(app.log); // one log stream: Node's warnings too
  if (stopTracing) app.addHook('onClose', stopTracing); // the last spans are sent before exit
  exitOnSignals(app);
  if (config.production && !config.databaseUrl)
    app.log.warn('ALLOW_EMBEDDED_STORE: production on the embedded store, one instance only and not safe against a crash; set DATABASE_URL (docs/deploy.md)');
  const address = await app.listen({ port: config.port, host: config.host }).catch(async (error) => {
    const failure = listenFailure(error, config!.host, config!.port);
    if (!failure) throw error;
    await app.close();
    throw failure;
  });
  const demo = config.demo ? await quietly(app, () => seedDemoWorkspace(app.platform, app)) : null;
  if (config.logFormat === 'json') {
    // Among JSON log lines the banner is one of them, naming the URL users reach rather than the socket.
    const url = config.publicUrl;
    app.log.info({ listening: address, public_url: url, docs: `${url}/docs`, settings: `${url}/account`, health: `${url}/healthz` }, `Serving ${url}`);
  } else {
    console.log(`Listening on ${address}
  home       ${address}/
  docs       ${address}/docs
  settings   ${address}/account
  health     ${address}/healthz
  documents  ${address}/openapi/{account,connect,login,messaging}.3.1.yaml`);
  }
  if (demo) console.log(describeDemo(demo, address, undefined, { docs: false }));
  else if (config.demo && (await demoWorkspaceId(app.platform))) console.log(describeExistingDemo(address, await serviceNumberOf(app)));
}

/** Without the request lines of the in-process calls that seeding makes (they would precede the banner). */
async function quietly<T>(app: FastifyInstance, work: () => Promise<T>): Promise<T> {
  const level = app.log.level;
  if (['info', 'debug', 'trace'].includes(level)) app.log.level = 'warn'; // never more verbose than asked
  try {
    return await work();
  } finally {
    app.log.level = level;
  }
}

main().catch((error) => {
  if (error instanceof ConfigError) {
    console.error(error.message); // settings, or a wrong SECRET_KEY for this database (bad-inputs L7)
    process.exit(2);
  }
  const line = describeStartFailure(error, config);
  if (line) console.error(line);
  // An unreachable database at start (bad-inputs F-5) is an operations problem, not a crash:
  // one clear line, no stack, and a non-zero exit so that the orchestrator retries.
  else if (isUnavailable(error))
    console.error(`Cannot start: the database is not reachable (${(error as Error).message}). Check DATABASE_URL and that PostgreSQL accepts connections.`);
  else console.error(error);
  process.exit(1);
});
