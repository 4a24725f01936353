// The mock commands people are told to run: the README's (its mock section) and the banner of
// `npm run mock` (mocks/banner.mjs), run as written against the messaging mock (on another port),
// and the shared problem examples served for every status that has one (mocks/front.mjs picks
// the status of `Prefer: example=<name>`).
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { banner, bannerCommands } from '../../../mocks/banner.mjs';
import { startMocks } from '../../../mocks/mocks.mjs';
import { loadCases, loadDocument } from '../../contract/cases.js';
import { buildRequest } from '../../contract/http.js';
import { freePort } from '#test/support/free-port.js';

const run = promisify(execFile);
const root = new URL('../../../', import.meta.url);
const README_MOCK = 'http://127.0.0.1:4013';

let mocks: { urls: Record<string, string>; stop: () => Promise<unknown> };
beforeAll(async () => {
  mocks = await startMocks({ ports: { messaging: await freePort() } });
});
afterAll(() => mocks?.stop());

/** The README's mock block: each command, and the status its comment promises (`# 401: …`). */
function readmeMockCommands(): { command: string; status?: number }[] {
  const readme = readFileSync(new URL('README.md', root), 'utf8');
  const section = readme.slice(readme.indexOf('## For frontend teams'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  return block
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [command = '', comment = ''] = line.split(/\s+#\s/);
      const status = /^(\d{3}):/.exec(comment)?.[1];
      return { command: command.trim(), ...(status ? { status: Number(status) } : {}) };
    });
}

/** Runs one curl command line as written (the mock's URL swapped in); its status and JSON body. */
async function curl(command: string): Promise<{ status: number; body: any }> {
  const { stdout } = await run('bash', ['-c', `${command.replaceAll(README_MOCK, mocks.urls.messaging!)} -s -w '\\n%{http_code}'`], { cwd: root });
  const lines = stdout.trimEnd().split('\n');
  const status = Number(lines.pop());
  return { status, body: JSON.parse(lines.join('\n')) };
}

function expectRealProblem(body: any, status: number) {
  expect(body.type).toMatch(/^https:\/\/chatapp\.example\/problems\/[a-z-]+$/);
  expect(body.status).toBe(status);
  expect(body.title).toMatch(/^[A-Z][a-z]/);
  expect(body.title).not.toBe('string');
  expect(typeof body.detail).toBe('string');
}

describe("the README's mock commands", () => {
  const commands = readmeMockCommands();

  it('the block has the curl commands it explains', () => {
    expect(commands.filter((c) => c.command.startsWith('curl ')).map((c) => c.status)).toEqual([200, 401, 404, 400]);
  });

  it.each(commands.filter((c) => c.command.startsWith('curl ')).map((c) => [c.command, c.status] as const))('%s answers %s', async (command, status) => {
    const answer = await curl(command);
    expect(answer.status).toBe(status);
    if (status! >= 400) expectRealProblem(answer.body, status!);
    else expect(answer.body.type).toBeUndefined();
  });

  it('a request that breaks the contract names what is wrong, as the server does', async () => {
    const command = commands.find((c) => c.status === 400)!.command;
    expect((await curl(command)).body.errors).toEqual([{ pointer: '/body/contact_no', detail: 'is required' }]);
  });

  it('mock:examples lists the example names the commands use', async () => {
    const command = commands.find((c) => c.command.startsWith('npm run mock:examples'))!.command;
    const { stdout } = await run('bash', ['-c', command], { cwd: root });
    for (const { command: other } of commands) {
      const name = /example=(\w+)/.exec(other)?.[1];
      if (name && other.includes('/api/contacts')) expect(stdout).toContain(name);
    }
    expect(stdout).toMatch(/401: unauthorized/);
  });
});

describe('the banner of npm run mock', () => {
  it('prints its example commands, and each works as printed', async () => {
    const commands = bannerCommands(mocks.urls.messaging!);
    const text = banner(mocks.urls);
    for (const command of commands) expect(text).toContain(command);
    const answers = await Promise.all(commands.map(curl));
    expect(answers.map((a) => a.status)).toEqual([404, 404, 400]);
    answers.forEach((a) => expectRealProblem(a.body, a.status));
  });
});

describe('shared problem examples', () => {
  const doc = loadDocument('messaging');
  const cases = loadCases('messaging').filter((c) => c.status !== undefined && c.status < 300);
  // One operation per shared example, reached with a request the mock takes (a success case's).
  const picks = new Map<string, { status: number; case: (typeof cases)[number] }>();
  for (const c of cases) {
    for (const [status, response] of Object.entries<any>(doc.paths[c.path][c.method.toLowerCase()].responses)) {
      for (const media of Object.values<any>(response.content ?? {})) {
        for (const [name, example] of Object.entries<any>(media.examples ?? {})) {
          if (example.$ref && !picks.has(name)) picks.set(name, { status: Number(status), case: c });
        }
      }
    }
  }

  it('cover every status the generation gives one for', () => {
    expect([...new Set([...picks.values()].map((p) => p.status))].sort()).toEqual([400, 401, 402, 403, 404, 409, 413, 415, 422, 429, 502, 503, 504]);
  });

  it.each([...picks].map(([name, pick]) => [name, pick] as const))('Prefer: example=%s answers it, with its status', async (name, pick) => {
    const { url, init } = buildRequest(pick.case, { name: 'mock', baseUrl: () => mocks.urls.messaging! });
    const headers = new Headers(init.headers);
    headers.set('prefer', `example=${name}`);
    const res = await fetch(url, { ...init, headers });
    expect(res.status).toBe(pick.status);
    expect(await res.json()).toEqual(doc.components.examples[name].value);
  });
});
