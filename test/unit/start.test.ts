// server/server.ts as a child process. A bad start says what went wrong and what to do in one
// line on stderr, with no stack, and exits non-zero; a clean start prints no warning before its
// banner. The PostgreSQL cases need one
// (DATABASE_URL, or postgres/postgres on 127.0.0.1:5432: `bash .ci/postgres.sh`) and are skipped
// without it.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { lockDataDir } from '#server/start-checks.js';
import { freePort } from '../support/free-port.js';
import { seedDataDir } from '../support/store.js';

const SERVER = fileURLToPath(new URL('../../server/server.ts', import.meta.url));
const TSX = new URL('../../node_modules/tsx/dist/loader.mjs', import.meta.url).href;
const ADMIN_URL = process.env.DATABASE_URL ?? 'postgres://postgres:postgres@127.0.0.1:5432/postgres';

/** What a server prints once it serves: the banner (development) or its JSON line (production). */
const SERVING = /Listening on |"public_url"/;

/**
 * Bounds for a test that starts the server: a hang detector, not a speed. A start compiles the
 * server with tsx and opens the store; on a busy 2-core machine that takes many times what it does
 * alone, and nothing in these tests depends on how long it takes.
 */
const START_MS = 180_000;

/**
 * The server's exit code and what it printed, the environment being only `env` (and PATH); with
 * `until`, the server is stopped once its output matches it. One that should have refused to start
 * but serves is stopped as soon as it says so (the test then fails on its exit code), and whatever
 * ends the test, its timeout included, ends the server: no wall-clock limit of its own.
 */
function start(env: Record<string, string>, until?: RegExp): Promise<{ code: number | null; stderr: string; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', TSX, SERVER], {
      env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', DEMO: 'false', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    onTestFinished(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
    const stopAt = until ?? SERVING;
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
      if (stopAt.test(stdout) && !child.killed) child.kill('SIGTERM'); // once: a second SIGTERM is not graceful
    });
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stderr, stdout }));
  });
}

/** One line on stderr, nothing on stdout, no stack trace. */
function expectOneLine(result: { stderr: string; stdout: string }, pattern: RegExp) {
  const lines = result.stderr.trim().split('\n');
  expect(lines, result.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(pattern);
  expect(result.stderr).not.toMatch(/\n\s+at |node_modules/);
  expect(result.stdout).toBe('');
}

async function postgresReachable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.end();
    return true;
  } catch {
    return false;
  }
}

describe('starting the server', () => {
  let root: string;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'bad-start-'));
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it(
    'port in use: names the port and another one to use; exits 1',
    async () => {
      const port = await freePort();
      const taken: Server = createServer();
      await new Promise<void>((ok) => taken.listen(port, '127.0.0.1', ok));
      try {
        const result = await start({ PORT: String(port), DATA_DIR: join(root, 'port') });
        expect(result.code).toBe(1);
        expectOneLine(result, new RegExp(`^Cannot start: port ${port} on 127\\.0\\.0\\.1 is in use by another program\\. .*PORT=${port + 1} npm start$`));
      } finally {
        taken.close();
      }
    },
    START_MS,
  );

  it(
    'DATA_DIR is a file: says it is not a directory; exits 1',
    async () => {
      const file = join(root, 'a-file');
      writeFileSync(file, 'x');
      const result = await start({ DATA_DIR: file });
      expect(result.code).toBe(1);
      expectOneLine(result, /^Cannot start: DATA_DIR .*a-file is not a directory .*Point DATA_DIR at a directory/);
      // Below a file, too.
      expectOneLine(await start({ DATA_DIR: join(file, 'data') }), /is not a directory/);
    },
    START_MS,
  );

  it(
    'DATA_DIR not writable: says so and how to fix it; exits 1',
    async () => {
      // root writes anywhere but in sysfs; anyone else is stopped by the directory's mode.
      let dataDir = '/sys/chatapp-data';
      if (process.getuid?.() !== 0) {
        dataDir = join(root, 'read-only');
        mkdirSync(dataDir, { mode: 0o500 });
      }
      const result = await start({ DATA_DIR: dataDir });
      expect(result.code).toBe(1);
      expectOneLine(result, /^Cannot start: DATA_DIR .* is not writable \((EACCES|EPERM|EROFS)\)\. Give the user running the server write access/);
    },
    START_MS,
  );

  it(
    'DATA_DIR held by a running server: names its pid; exits 1',
    async () => {
      const dataDir = join(root, 'held');
      mkdirSync(dataDir);
      writeFileSync(join(dataDir, 'server.pid'), String(process.pid)); // this test's process: alive
      const result = await start({ DATA_DIR: dataDir });
      expect(result.code).toBe(1);
      expectOneLine(result, new RegExp(`^Cannot start: DATA_DIR .*held is in use by a running server \\(pid ${process.pid}\\)\\. Stop it first`));
    },
    START_MS,
  );

  it(
    'invalid settings: each once, none derived from another; exits 2',
    async () => {
      const result = await start({ PORT: 'eighty', LOG_LEVEL: 'loud', SIGNUP: 'maybe', DATA_DIR: join(root, 'settings') });
      expect(result.code).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr.trim().split('\n')).toEqual([
        'Cannot start: 3 settings are invalid:',
        '  PORT must be an integer 0-65535, got "eighty"',
        '  LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud"',
        '  SIGNUP must be one of open, invite, closed, got "maybe"',
      ]);
      const one = await start({ TRUST_PROXY: '10.0.0.0/33', DATA_DIR: join(root, 'settings') });
      expect(one.code).toBe(2);
      expectOneLine(one, /^Cannot start: TRUST_PROXY must be .*"10\.0\.0\.0\/33" is none of these\.$/);
    },
    START_MS,
  );

  it(
    'production without PUBLIC_URL or PostgreSQL: both said, with what to set; exits 2',
    async () => {
      const result = await start({ NODE_ENV: 'production', SECRET_KEY: 'k'.repeat(40), DATA_DIR: join(root, 'production') });
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/PUBLIC_URL is required when NODE_ENV=production/);
      expect(result.stderr).toMatch(/DATABASE_URL is required when NODE_ENV=production .* set ALLOW_EMBEDDED_STORE=1/);
    },
    START_MS,
  );

  it(
    'production on the embedded store with ALLOW_EMBEDDED_STORE=1: starts, with a JSON warning before the banner',
    async () => {
      const dataDir = join(root, 'allowed');
      mkdirSync(dataDir);
      await seedDataDir(dataDir);
      const result = await start(
        {
          NODE_ENV: 'production',
          SECRET_KEY: 'k'.repeat(40),
          PUBLIC_URL: 'https://chat.example',
          ALLOW_EMBEDDED_STORE: '1',
          PORT: '0',
          DATA_DIR: dataDir,
          LOG_LEVEL: 'info',
        },
        /"public_url"/,
      );
      expect(result.code).toBe(0);
      const lines = result.stdout.trim().split('\n');
      const warning = JSON.parse(lines[0]!);
      expect(warning).toMatchObject({ level: 40, msg: expect.stringMatching(/^ALLOW_EMBEDDED_STORE: production on the embedded store, one instance only/) });
      // Every line is JSON, the banner too, and it names PUBLIC_URL (the socket's address only as `listening`).
      const entries = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(entries.find((entry) => entry.public_url)).toMatchObject({
        level: 30,
        msg: 'Serving https://chat.example',
        public_url: 'https://chat.example',
        docs: 'https://chat.example/docs',
        listening: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
      });
    },
    START_MS,
  );

  it(
    'a SECRET_KEY other than the one the data was sealed with: one "Cannot start:" line; exits 2',
    async () => {
      const dataDir = join(root, 'sealed');
      mkdirSync(dataDir);
      await seedDataDir(dataDir);
      const pglite = await PGlite.create({ dataDir: join(dataDir, 'pglite') });
      await pglite.query("insert into platform_settings (name, value) values ('key_check', 'sealed under another key')");
      await pglite.close();
      const result = await start({ SECRET_KEY: 'a-key-this-database-never-saw-0123456789', DATA_DIR: dataDir });
      expect(result.code).toBe(2);
      expectOneLine(result, /^Cannot start: SECRET_KEY is not the key this database was sealed with\. Start with the original SECRET_KEY/);
    },
    START_MS,
  );

  it(
    'a clean development start: no warning, readable log lines, the banner with the docs once, the Login key and number',
    async () => {
      const dataDir = join(root, 'clean');
      mkdirSync(dataDir);
      await seedDataDir(dataDir);
      const result = await start({ PORT: '0', DATA_DIR: dataDir, DEMO: 'true', LOG_LEVEL: 'info' }, /login demo/);
      expect(result.code).toBe(0);
      expect(result.stderr).toBe('');
      const beforeBanner = result.stdout.slice(0, result.stdout.indexOf('Listening on')).trim().split('\n');
      expect(beforeBanner).toEqual([expect.stringMatching(/^\[\d\d:\d\d:\d\d\] INFO: Server listening at http:\/\/127\.0\.0\.1:\d+$/)]);
      expect(result.stdout).toMatch(/Listening on http:[\s\S]*docs {7}http:[^\n]*\/docs\n[\s\S]*Demo workspace created[\s\S]*Login key {4}lk_live_\w+/);
      expect(result.stdout.match(/\/docs\b/g)).toHaveLength(1);
      expect(result.stdout).toMatch(/\n {2}Login no\. {4}\+\d[\d ]+\d {3}\(the Login service number/);
    },
    START_MS,
  );

  describe('on PostgreSQL', async () => {
    const reachable = await postgresReachable();
    const url = (change: (url: URL) => void) => {
      const parsed = new URL(ADMIN_URL);
      change(parsed);
      return parsed.toString();
    };

    it.skipIf(!reachable)(
      'a wrong password: names the user and DATABASE_URL; exits 1',
      async () => {
        const result = await start({
          DATABASE_URL: url((u) => (u.password = 'not-the-password')),
          DATA_DIR: join(root, 'pg-auth'),
        });
        expect(result.code).toBe(1);
        expectOneLine(result, /^Cannot start: PostgreSQL at [^ ]+:\d+ (refused the password of user|refused user) "[^"]+".* Check the user .*DATABASE_URL/);
        expect(result.stderr).not.toContain('not-the-password');
      },
      START_MS,
    );

    it.skipIf(!reachable)(
      'a missing database: offers the createdb command; exits 1',
      async () => {
        const result = await start({ DATABASE_URL: url((u) => (u.pathname = '/chatapp_no_such_db')), DATA_DIR: join(root, 'pg-missing') });
        expect(result.code).toBe(1);
        const u = new URL(ADMIN_URL);
        expectOneLine(
          result,
          new RegExp(
            `^Cannot start: database "chatapp_no_such_db" does not exist on ${u.hostname}:${u.port || 5432}\\. Create it: createdb -h ${u.hostname} -p ${u.port || 5432} -U ${u.username} chatapp_no_such_db$`,
          ),
        );
      },
      START_MS,
    );
  });
});

describe('the embedded store held by one process (DATA_DIR/server.pid)', () => {
  const exited = (child: ReturnType<typeof spawn>) => new Promise<void>((resolve) => child.once('exit', () => resolve()));

  it('a pid file left by a process that is gone, or naming a program other than node, is taken over', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'lock-'));
    try {
      const gone = spawn('true');
      await exited(gone);
      writeFileSync(join(dataDir, 'server.pid'), String(gone.pid));
      lockDataDir(dataDir);
      expect(readFileSync(join(dataDir, 'server.pid'), 'utf8')).toBe(String(process.pid));

      const other = spawn('sleep', ['30']); // alive, but not a server
      try {
        writeFileSync(join(dataDir, 'server.pid'), String(other.pid));
        expect(() => lockDataDir(dataDir)).not.toThrow();
      } finally {
        other.kill();
        await exited(other);
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('a live node process holding it refuses, naming its pid', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'lock-'));
    try {
      writeFileSync(join(dataDir, 'server.pid'), String(process.ppid)); // vitest's main process: node
      expect(() => lockDataDir(dataDir)).toThrow(new RegExp(`in use by a running server \\(pid ${process.ppid}\\)`));
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
