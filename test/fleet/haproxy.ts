// HAProxy in front of the fleet test's instances, with the reference configuration of
// deploy/haproxy.cfg (its ports filled in through the environment, which HAProxy expands).
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { eventually } from '../support/eventually.js';
import { freePort } from '../support/free-port.js';

export const CONFIG = fileURLToPath(new URL('../../deploy/haproxy.cfg', import.meta.url));

export async function startHaproxy(instances: [string, string, string]) {
  const port = await freePort();
  const child: ChildProcess = spawn('haproxy', ['-db', '-f', CONFIG], {
    env: { ...process.env, FLEET_BIND: `127.0.0.1:${port}`, FLEET_A: instances[0], FLEET_B: instances[1], FLEET_C: instances[2] },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (c) => (stderr += c));
  const url = `http://127.0.0.1:${port}`;
  await eventually(
    async () => {
      if (child.exitCode !== null) throw new Error(`haproxy exited: ${stderr}`);
      return fetch(`${url}/readyz`).then(
        (r) => r.status === 200,
        () => false,
      );
    },
    { within: 20_000, what: 'haproxy serving /readyz', every: 100 },
  );
  return {
    url,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
