// Apps for tests, closed afterwards (as fastify/demo's test helper does): `build()` gives a
// fresh app closed after the test; `buildShared()` one closed after the file, for read-only
// checks and for tests that each use workspaces of their own. The closing hooks are registered
// for every file by test/setup.ts (a module's own top-level hooks would only reach the first
// file of a worker that imports it).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '#server/app.js';
import { loadConfig } from '#server/config.js';
import type { PlatformOverrides } from '#server/platform.js';
import { openTestStore } from './support/store.js';
import { timed } from './support/phases.js';

const perTest: (() => Promise<void>)[] = [];
const perFile: (() => Promise<void>)[] = [];

/** Closes the apps built by the test that just ended (test/setup.ts, afterEach). */
export async function closeTestApps(): Promise<void> {
  while (perTest.length) await perTest.pop()!();
}

/** Closes the apps built for the file that just ended (test/setup.ts, afterAll). */
export async function closeFileApps(): Promise<void> {
  while (perFile.length) await perFile.pop()!();
}

/**
 * scrypt's N for the owners tests create (hundreds of sign-ups and sign-ins a run, 0.4 s each at
 * the production 2^17). Tests of the hashing itself build with `passwordCost: PASSWORD_COST`.
 */
export const TEST_PASSWORD_COST = 2 ** 10;

export interface BuildOptions {
  env?: Record<string, string>;
  overrides?: PlatformOverrides;
}

async function open(list: (() => Promise<void>)[], { env = {}, overrides = {} }: BuildOptions): Promise<FastifyInstance> {
  const dataDir = mkdtempSync(join(tmpdir(), 'app-'));
  const store = overrides.store ?? (await openTestStore());
  // Suites send many deliberate 401s from 127.0.0.1: only a test that asks for it (bad-inputs K3) gets the
  // per-IP limit on failed authentications.
  const app = await timed('build', async () => {
    // A production app in a test runs on the test store, with sign-up open unless the test says otherwise.
    const production = env.NODE_ENV === 'production' ? { PUBLIC_URL: 'https://chatapp.test', ALLOW_EMBEDDED_STORE: '1', SIGNUP: 'open' } : {};
    const config = loadConfig({ PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'silent', DEMO: 'false', AUTH_FAILURES_PER_IP: '1000000', ...production, ...env });
    const built = await buildApp(config, { sandboxTestMode: true, passwordCost: TEST_PASSWORD_COST, ...overrides, store });
    await built.ready();
    return built;
  });
  list.push(async () => {
    await app.close();
    if (!overrides.store) await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return app;
}

export const build = (options: BuildOptions = {}) => open(perTest, options);
export const buildShared = (options: BuildOptions = {}) => open(perFile, options);
