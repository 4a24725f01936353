// Prism mock servers, one per API, serving the examples of generated/<api>/openapi.3.1.yaml.
// Each Prism listens on a free port of 127.0.0.1 behind a front on the API's port (front.mjs).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { createFront } from './front.mjs';

export const API_ORDER = ['account', 'connect', 'login', 'messaging'];

/** Ports from a base (MOCK_PORT_BASE, default 4010): account, connect, login, messaging in order. */
export function portsFrom(base) {
  const first = Number(base);
  if (!Number.isInteger(first) || first < 1 || first > 65_535 - API_ORDER.length) throw new Error(`not a port base: ${base}`);
  return Object.fromEntries(API_ORDER.map((api, i) => [api, first + i]));
}

export const MOCK_PORTS = portsFrom(4010);

const root = fileURLToPath(new URL('..', import.meta.url));
const prism = fileURLToPath(new URL('../node_modules/@stoplight/prism-cli/dist/index.js', import.meta.url));

/**
 * Starts one Prism process per API and resolves once all answer.
 * @param {{ ports?: Record<string, number>, host?: string, dynamic?: boolean, log?: (line: string) => void }} options
 */
export async function startMocks({ ports = MOCK_PORTS, host = '127.0.0.1', dynamic = false, log = () => {} } = {}) {
  const children = [];
  const fronts = [];
  const stop = async () => {
    await Promise.all([
      ...fronts.map((front) => new Promise((resolve) => (front.closeAllConnections(), front.close(() => resolve())))),
      ...children.map(
        ({ child }) =>
          new Promise((resolve) => {
            if (child.exitCode !== null) return resolve();
            child.once('exit', resolve);
            child.kill('SIGTERM');
          }),
      ),
    ]);
  };
  try {
    for (const [api, port] of Object.entries(ports)) {
      const internal = await freePort();
      const args = [prism, 'mock', `generated/${api}/openapi.3.1.yaml`, '--host', '127.0.0.1', '--port', String(internal)];
      if (dynamic) args.push('--dynamic');
      const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
      child.stdout.on('data', (chunk) => log(`[${api}] ${chunk}`));
      child.stderr.on('data', (chunk) => log(`[${api}] ${chunk}`));
      children.push({ api, child, internal, url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}` });
      const doc = parse(readFileSync(new URL(`../generated/${api}/openapi.3.1.yaml`, import.meta.url), 'utf8'));
      const front = createFront(doc, internal);
      fronts.push(front);
      await new Promise((resolve, reject) => front.once('error', reject).listen(port, host, resolve));
    }
    await Promise.all(children.map(({ api, internal, child }) => waitUntilUp(api, `http://127.0.0.1:${internal}`, child)));
  } catch (error) {
    await stop();
    throw error;
  }
  return { urls: Object.fromEntries(children.map(({ api, url }) => [api, url])), stop };
}

/** A port of 127.0.0.1 nothing listens on now (Prism must be told its port). */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

export async function waitUntilUp(api, url, child, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the ${api} mock exited with code ${child.exitCode}`);
    try {
      await fetch(url, { signal: AbortSignal.timeout(1000) });
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  throw new Error(`the ${api} mock did not start within ${timeoutMs / 1000} s`);
}
