// `npm run seed:scale -- --contacts 1000000 --messages 3000000 --sessions 1000000`: a realistic
// workspace of that size in the PostgreSQL database DATABASE_URL (migrated first), through the
// product's own tables (bench/lib/scale-seed.ts). The owner signs up through the API; the rows
// are written by the database itself. Prints the workspace and how to sign in as its owner, and
// keeps the same in bench/results/scale-<database>.json for `npm run bench:scale`.
import { fileURLToPath } from 'node:url';
import { mkdirSync, writeFileSync } from 'node:fs';
import pg from 'pg';
import { buildApp } from '#server/app.js';
import { loadConfig } from '#server/config.js';
import { base62 } from '#server/lib/ids.js';
import { seedScale, type ScaleSeedResult, type ScaleSize } from './lib/scale-seed.js';

/** The key every scale database is sealed with, so any run's server can open it (bench only). */
export const SCALE_SECRET_KEY = 'scale-bench-secret-key-not-for-production-0001';
export const SCALE_PASSWORD = 'scale-bench-password-123';

export interface ScaleInfo extends ScaleSeedResult {
  database: string;
  size: ScaleSize;
  workspaceId: string;
  email: string;
  totalSeconds: number;
}

export function infoPath(databaseUrl: string): string {
  return fileURLToPath(new URL(`./results/scale-${new URL(databaseUrl).pathname.slice(1)}.json`, import.meta.url));
}

export async function seedDatabase(databaseUrl: string, size: ScaleSize, log: (line: string) => void = console.log): Promise<ScaleInfo> {
  const started = performance.now();
  const app = await buildApp(
    loadConfig({
      PORT: '0',
      DATABASE_URL: databaseUrl,
      SECRET_KEY: SCALE_SECRET_KEY,
      LOG_LEVEL: 'silent',
      DEMO: 'false',
      GRAPH_API_URL: 'http://127.0.0.1:9/',
    }),
  );
  const tag = base62(6);
  const email = `scale-${tag.toLowerCase()}@bench.example`;
  let workspaceId: string;
  try {
    const res = await app.inject({
      method: 'POST',
      url: '/api/account/workspaces',
      payload: { email, password: SCALE_PASSWORD, name: 'Scale', workspace_name: `Scale ${size.contacts}`, workspace_slug: `scale-${tag.toLowerCase()}` },
    });
    if (res.statusCode !== 201) throw new Error(`sign-up failed: ${res.statusCode} ${res.body}`);
    workspaceId = res.json().workspace.id;
  } finally {
    await app.close();
  }
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  let seeded: ScaleSeedResult;
  try {
    seeded = await seedScale(client, workspaceId, tag, size, log);
  } finally {
    await client.end();
  }
  const info: ScaleInfo = {
    database: new URL(databaseUrl).pathname.slice(1),
    size,
    workspaceId,
    email,
    ...seeded,
    totalSeconds: (performance.now() - started) / 1000,
  };
  mkdirSync(fileURLToPath(new URL('./results/', import.meta.url)), { recursive: true });
  writeFileSync(infoPath(databaseUrl), `${JSON.stringify(info, null, 2)}\n`);
  return info;
}

export function flag(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const raw = i >= 0 ? process.argv[i + 1] : process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
  if (raw === undefined) return fallback;
  const n = Number(raw.replace(/_/g, ''));
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a whole number`);
  return n;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL names the PostgreSQL database to fill');
  const contacts = flag('contacts', 10_000);
  const size = { contacts, messages: flag('messages', contacts * 3), sessions: flag('sessions', contacts) };
  const info = await seedDatabase(url, size);
  console.log(JSON.stringify(info));
}
