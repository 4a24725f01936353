// Apps for the log and error-hygiene cases (bad-inputs L3, L7, M2): built like test/helper.ts does, but
// with pino's output captured line by line, a given store, and closed by the caller's afterAll.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect } from 'vitest';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildApp } from '#server/app.js';
import { loadConfig } from '#server/config.js';
import type { Store } from '#server/store/db.js';
import { timed } from '../support/phases.js';
import { openTestStore } from '../support/store.js';

export interface LoggedApp {
  app: FastifyInstance;
  /** Every line pino wrote, newline included. */
  lines: string[];
  store: Store;
}

/** An app logging at `level` into `lines`; `wrap` may replace the store (a throwing one for bad-inputs M2). */
export async function loggedApp({
  env = {},
  level = 'debug',
  wrap = (s: Store) => s,
}: {
  env?: Record<string, string>;
  level?: string;
  wrap?: (store: Store) => Store;
} = {}): Promise<LoggedApp> {
  const lines: string[] = [];
  const store = await openTestStore();
  const dataDir = mkdtempSync(join(tmpdir(), 'logged-'));
  const app = await timed('build', () =>
    buildApp(
      loadConfig({ PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: level, DEMO: 'false', ...env }),
      { store: wrap(store), sandboxTestMode: true },
      { stream: { write: (line: string) => lines.push(line) } },
    ),
  );
  afterAll(async () => {
    await app.close();
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  await app.ready();
  return { app, lines, store };
}

export interface SeenError {
  url: string;
  status: number;
  contentType: string;
  body: string;
  requestId: string;
}

/**
 * Records every 4xx/5xx answer `app.inject` gives from now on (the test-helper hook of bad-inputs M1);
 * `expectProblems` then checks them all at the end of a file.
 */
export function recordErrors(app: FastifyInstance): SeenError[] {
  const seen: SeenError[] = [];
  const inject = app.inject.bind(app) as (options: unknown) => Promise<LightMyRequestResponse>;
  (app as { inject: unknown }).inject = async (options: unknown) => {
    const res = await inject(options);
    const url = typeof options === 'string' ? options : String((options as { url?: unknown }).url ?? '');
    if (res.statusCode >= 400)
      seen.push({
        url,
        status: res.statusCode,
        contentType: String(res.headers['content-type']),
        body: res.body,
        requestId: String(res.headers['x-request-id']),
      });
    return res;
  };
  return seen;
}

/**
 * bad-inputs M1: each recorded error is problem+json with `type`, `title`, `status` (= HTTP), `detail` and
 * `instance`, its request id in the body, nothing internal. The exceptions the catalogue names:
 * OAuth endpoints answer RFC 6749 JSON (bad-inputs C14) and HTML pages answer HTML.
 */
export function expectProblems(seen: SeenError[]) {
  const problems = seen.filter((e) => !e.url.startsWith('/api/oauth/') && !e.contentType.startsWith('text/html'));
  for (const e of problems) {
    expect(e.contentType, `${e.url} ${e.body}`).toMatch(/^application\/problem\+json/);
    const body = JSON.parse(e.body);
    expect(body, e.url).toMatchObject({
      type: expect.stringMatching(/^https:\/\/chatapp\.example\/problems\/[a-z-]+$/),
      title: expect.any(String),
      status: e.status,
      detail: expect.any(String),
      instance: expect.stringMatching(/^\//),
    });
    expect(body.request_id, e.url).toBe(e.requestId);
    expect(e.body, e.url).not.toMatch(/\n\s+at |node_modules|\.ts:\d|\/work\/|\/tmp\/|FST_ERR|"statusCode"|\bselect\b.+\bfrom\b|\binsert into\b/i);
  }
  return problems.length;
}
