// The getting-started guides run as written: each guide's ```sh blocks, in order, in one bash
// session under `set -euo pipefail`, against one fresh server on a free port started as the
// README's `npm start` starts it (no PROVIDER_APP_SECRET: the development default signs) (the guides share
// their owner as a reader's would: the first signs up, the others get 409 and sign in). The only change to the text: the server's address
// (http://127.0.0.1:3000) and the port of the app's stand-in (3903) become free ones. The
// session's folder stands for the repository's (the guides name files in it, sample.pdf and
// receiver.mjs, import clients/ and run npm scripts) and receives what they write (cookie jars,
// deliveries, the Messaging guide's TypeScript block saved as messaging.ts, which its last shell
// block runs on the same workspace).
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildShared } from '#test/helper.js';
import { freePort } from '#test/support/free-port.js';

const root = join(import.meta.dirname, '..', '..', '..');
const SERVER = 'http://127.0.0.1:3000';
const APP_PORT = '3903';
const LOCAL_ADDRESSES = new RegExp(`${SERVER.replaceAll('.', '\\.')}|${APP_PORT}`, 'g');

/** The ```sh blocks of a Markdown file, in order. */
function shellBlocks(markdown: string): string[] {
  return codeBlocks(markdown, 'sh');
}

/** The fenced blocks of one language, in order. */
function codeBlocks(markdown: string, language: string): string[] {
  return [...markdown.matchAll(new RegExp(`^\`\`\`${language}\n([\\s\\S]*?)^\`\`\`$`, 'gm'))].map((m) => m[1]!);
}

/** Files a guide tells the reader to save before its shell blocks run them. */
const SAVED: Record<string, (markdown: string) => Record<string, string>> = {
  messaging: (markdown) => ({ 'messaging.ts': codeBlocks(markdown, 'ts').at(-1)! }),
};

let app: FastifyInstance;
let base: string;
let appPort: string;
const folders: string[] = [];

beforeAll(async () => {
  const port = await freePort();
  appPort = String(await freePort());
  base = `http://127.0.0.1:${port}`;
  app = await buildShared({ env: { PORT: String(port), PUBLIC_URL: base } });
  await app.listen({ port, host: '127.0.0.1' });
});
afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

type Run = { code: number | null; output: string; stdout: string };

const guide = (name: string) => readFileSync(join(root, 'docs', 'getting-started', `${name}.md`), 'utf8');

/** Every guide, and what its run must show besides ending well. */
const GUIDES = readdirSync(join(root, 'docs', 'getting-started'))
  .filter((file) => file.endsWith('.md'))
  .map((file) => file.slice(0, -3))
  .sort();
const EXPECTED: Record<string, { what: string; shows: RegExp[] }> = {
  connect: {
    what: 'consent by script, the code exchanged, a document shared, the signed deliveries verified, grant events heard',
    shows: [
      /oauth\/callback\?code=ac_\w+&state=xyz123/,
      /signature verified/,
      /"type":"document.updated"[^\n]*"org_id":"ws_\w+","org_slug":"acme-travel","grant_id":"grt_\w+"/,
      /client delivery verified/,
      /"type":"grant.revoked"[^\n]*"org_slug":"acme-travel"[^\n]*"reason":"owner_revoked"/,
      /"type":"grant.created"[^\n]*"org_slug":"acme-travel"/,
      /"event_type":"grant.created","status":"succeeded"[^\n]*"event_type":"grant.revoked"[^\n]*"event_type":"document.updated"/,
      /data-kind="pdf"/,
      /Verify your phone to open this document/,
    ],
  },
  login: {
    what: 'a session verified from the sandbox phone, the token accepted once, the webhook verified',
    shows: [
      /event: verified/,
      /"valid":true/,
      /"reason":"already_used"/,
      /signature verified/,
      /"status":"success","expiresAt":"[^"]+","mode":"code"[^\n]*"boundPhone":"\+5511987654321"/,
    ],
  },
  messaging: {
    what: 'outside the window refused, then a reply sent, a template, a campaign, and its TypeScript on the same workspace',
    shows: [/problems\/outside-window/, /"status":"accepted"/, /"id":"cmp_\w+"/, /msg_\w+ accepted\n/, /\noutbound template (accepted|sent|delivered|read)\n/],
  },
};

/**
 * Runs blocks in one bash session in a folder of their own. bash leads a process group of its
 * own, killed when bash ends, so that a background process (the app's stand-in) cannot outlive
 * it. `onLine` sees each line of stdout as it comes (to act as the person reading it).
 */
function runBlocks(
  blocks: string[],
  name: string,
  env: Record<string, string> = {},
  onLine?: (line: string) => void,
  files: Record<string, string> = {},
): Promise<Run> {
  // One pass: a free port of the server that holds 3903 (43903) is not rewritten a second time.
  const local = (text: string) => text.replace(LOCAL_ADDRESSES, (found) => (found === SERVER ? base : appPort));
  const script = local(blocks.join('\n'));
  const folder = mkdtempSync(join(tmpdir(), `guide-${name}-`));
  folders.push(folder);
  for (const entry of ['package.json', 'node_modules', 'scripts', 'docs', 'clients']) symlinkSync(join(root, entry), join(folder, entry));
  for (const [file, text] of Object.entries(files)) writeFileSync(join(folder, file), local(text));
  const child = spawn('bash', ['-c', `set -euo pipefail\n${script}`], {
    cwd: folder,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => {
    const lines = `${stdout.slice(stdout.lastIndexOf('\n') + 1)}${chunk}`.split('\n').slice(0, -1);
    stdout += chunk;
    for (const line of lines) onLine?.(line);
  });
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const killGroup = () => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // the group has ended already
    }
  };
  const timer = setTimeout(killGroup, 60_000);
  return new Promise((resolve) => {
    child.once('exit', (code) => {
      clearTimeout(timer);
      killGroup();
      resolve({ code, stdout, output: `${stdout}\n--- stderr ---\n${stderr}` });
    });
  });
}

describe('getting-started guides', () => {
  it('every guide is run here, and none (nor the README) names a value of its author', () => {
    expect(GUIDES).toEqual(Object.keys(EXPECTED).sort());
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const texts: [string, string][] = [
      ...GUIDES.map((name) => [name, guide(name)] as [string, string]),
      ['README', readme.slice(readme.indexOf('## Trying the Login API'), readme.indexOf('## For frontend teams'))],
    ];
    for (const [name, text] of texts) {
      const script = shellBlocks(text).join('\n');
      expect(script, name).toContain(`B=${SERVER}`);
      // Ids and secrets shortened with … are output, never input: every command line is whole.
      const commands = script.split('\n').filter((line) => !line.trimStart().startsWith('#'));
      expect(
        commands.filter((line) => /…/.test(line.replace(/#.*$/, ''))),
        name,
      ).toEqual([]);
    }
  });

  for (const [name, { what, shows }] of Object.entries(EXPECTED)) {
    it(`${name}: ${what}`, async () => {
      const run = await runBlocks(shellBlocks(guide(name)), name, {}, undefined, SAVED[name]?.(guide(name)));
      expect(run.code, run.output).toBe(0);
      for (const pattern of shows) expect(run.stdout).toMatch(pattern);
    });
  }

  it("the Messaging guide's TypeScript says a refusal in one short line", async () => {
    const files = SAVED.messaging!(guide('messaging'));
    const run = await runBlocks(['KEY=mk_not_a_key NUMBER=pn_none npx tsx messaging.ts'], 'messaging-error', {}, undefined, files);
    expect(run.code).toBe(1);
    const stderr = run.output.slice(run.output.indexOf('--- stderr ---') + 15).trim();
    expect(stderr.split('\n'), stderr).toHaveLength(1);
    expect(stderr).toMatch(/^401 \w[^:]*: /);
  });

  it("the README's Login by hand and its signed deliveries, with the values npm start prints", async () => {
    // What npm start prints on first start (the demo owner and Login app), made here.
    const post = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
      const res = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
      expect(res.status, path).toBe(201);
      return (await res.json()) as Record<string, any>;
    };
    const owner = { email: 'readme@demo.example', password: 'readme demo password 1' };
    const created = await post('/api/account/workspaces', { ...owner, name: 'Demo owner', workspace_name: 'Demo', workspace_slug: 'readme-demo' });
    const loginApp = await post('/api/login/apps', { name: 'Demo Login app' }, { authorization: `Bearer ${created.session.access_token}` });
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## Trying the Login API'), readme.indexOf('## For frontend teams'));
    const blocks = shellBlocks(section);
    expect(blocks).toHaveLength(3);
    // The person at the sandbox phone: the LOGIN the block asks for, sent as the provider would.
    const sends: Promise<unknown>[] = [];
    const run = await runBlocks(blocks, 'readme', { LOGIN_KEY: loginApp.api_key, OWNER_EMAIL: owner.email, OWNER_PASSWORD: owner.password }, (line) => {
      const asked = /^send LOGIN (\w+) to /.exec(line);
      if (!asked) return;
      const deliver = [join(root, 'scripts', 'provider-deliver.mjs'), '--url', base, '--to', loginApp.provider_phone_number_id, '--from', '+5511987654321'];
      const child = spawn(process.execPath, [...deliver, '--text', `LOGIN ${asked[1]}`], {
        env: { ...process.env, PROVIDER_APP_SECRET: 'dev-app-secret' },
        stdio: 'ignore',
      });
      sends.push(new Promise((resolve) => child.once('exit', resolve)));
    });
    await Promise.all(sends);
    expect(sends).toHaveLength(1);
    expect(run.code, run.output).toBe(0);
    expect(run.stdout).toContain('event: verified');
    expect(run.stdout).toContain('"valid":true');
    expect(run.stdout.match(/\{"received":true\}/g)).toHaveLength(2);
  });
});
