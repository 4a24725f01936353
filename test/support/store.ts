// A migrated store per test file: in-memory PGlite, or, when DATABASE_URL is set (npm run
// test:pg), a fresh PostgreSQL database created for the file and dropped afterwards.
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { openStore, type Store } from '../../server/store/db.js';
import { base62 } from '../../server/lib/ids.js';
import { timed } from './phases.js';

export const onPostgres = Boolean(process.env.DATABASE_URL);

export async function openTestStore(): Promise<Store & { url?: string }> {
  const admin = process.env.DATABASE_URL;
  if (!admin) {
    const pglite = await timed('store', () => PGlite.create());
    return timed('migrations', () => openStore({ pglite }));
  }
  const name = `test_${base62(12).toLowerCase()}`;
  await timed('store', async () => {
    const client = new pg.Client({ connectionString: admin });
    await client.connect();
    await client.query(`create database ${name}`);
    await client.end();
  });
  const url = new URL(admin);
  url.pathname = `/${name}`;
  const store = await timed('migrations', () => openStore({ databaseUrl: url.toString() }));
  return {
    ...store,
    url: url.toString(),
    async close() {
      await store.close();
      const c = new pg.Client({ connectionString: admin });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    },
  };
}
