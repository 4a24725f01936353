// Apps for tests, closed afterwards (as fastify/demo's test helper does): `build()` gives a
// fresh app closed after the test; `buildShared()` one closed after the file, for read-only
// checks (building compiles every route's schemas, which takes seconds).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../server/app.js';
import { loadConfig } from '../server/config.js';

const perTest: (() => Promise<void>)[] = [];
const perFile: (() => Promise<void>)[] = [];

afterEach(async () => {
  while (perTest.length) await perTest.pop()!();
});
afterAll(async () => {
  while (perFile.length) await perFile.pop()!();
});

async function open(list: (() => Promise<void>)[], env: Record<string, string>): Promise<FastifyInstance> {
  const dataDir = mkdtempSync(join(tmpdir(), 'app-'));
  const app = await buildApp(loadConfig({ PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'silent', ...env }));
  list.push(async () => {
    await app.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  await app.ready();
  return app;
}

export const build = (env: Record<string, string> = {}) => open(perTest, env);
export const buildShared = (env: Record<string, string> = {}) => open(perFile, env);
