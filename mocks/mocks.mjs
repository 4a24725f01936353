// Prism mock servers, one per API, serving the examples of generated/<api>/openapi.3.1.yaml.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const MOCK_PORTS = { account: 4010, connect: 4011, login: 4012, messaging: 4013 };

const root = fileURLToPath(new URL('..', import.meta.url));
const prism = fileURLToPath(new URL('../node_modules/@stoplight/prism-cli/dist/index.js', import.meta.url));

/**
 * Starts one Prism process per API and resolves once all answer.
 * @param {{ ports?: Record<string, number>, dynamic?: boolean, log?: (line: string) => void }} options
 */
export async function startMocks({ ports = MOCK_PORTS, dynamic = false, log = () => {} } = {}) {
  const children = Object.entries(ports).map(([api, port]) => {
    const args = [prism, 'mock', `generated/${api}/openapi.3.1.yaml`, '--host', '127.0.0.1', '--port', String(port)];
    if (dynamic) args.push('--dynamic');
    const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (chunk) => log(`[${api}] ${chunk}`));
    child.stderr.on('data', (chunk) => log(`[${api}] ${chunk}`));
    return { api, port, child, url: `http://127.0.0.1:${port}` };
  });
  const stop = async () => {
    await Promise.all(
      children.map(({ child }) => new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', resolve);
        child.kill('SIGTERM');
      })),
    );
  };
  try {
    await Promise.all(children.map(({ api, url, child }) => waitUntilUp(api, url, child)));
  } catch (error) {
    await stop();
    throw error;
  }
  return { urls: Object.fromEntries(children.map(({ api, url }) => [api, url])), stop };
}

async function waitUntilUp(api, url, child, timeoutMs = 60_000) {
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
