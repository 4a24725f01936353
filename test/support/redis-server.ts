// A real redis-server for a test file, on a free port, in memory only (no RDB, no AOF), stopped
// with the file; `stop` and `start` again on the same port prove what happens while it is away.
// Without redis-server on the machine the Redis suites skip, unless REQUIRE_FLEET_ENGINES=1
// (.ci/run, which installs it from Debian): then its absence fails them.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { Socket } from 'node:net';
import { eventually } from './eventually.js';
import { freePort } from './free-port.js';

export const hasRedis = spawnSync('redis-server', ['--version']).status === 0;
if (!hasRedis && process.env.REQUIRE_FLEET_ENGINES === '1') throw new Error('REQUIRE_FLEET_ENGINES=1 but redis-server is not installed');

function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    socket.once('error', () => resolve(false));
    socket.connect(port, '127.0.0.1', () => {
      socket.write('PING\r\n');
      socket.once('data', (data) => {
        socket.destroy();
        resolve(data.toString().startsWith('+PONG'));
      });
    });
  });
}

export interface TestRedis {
  url: string;
  port: number;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export async function startRedis(): Promise<TestRedis> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const redis: TestRedis = {
    url: `redis://127.0.0.1:${port}`,
    port,
    async start() {
      child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
      await eventually(() => answers(port), { within: 10_000, what: 'redis-server answers PING' });
    },
    async stop() {
      const c = child;
      child = undefined;
      if (!c || c.exitCode !== null) return;
      await new Promise<void>((resolve) => {
        c.once('exit', () => resolve());
        c.kill('SIGKILL');
      });
    },
  };
  await redis.start();
  return redis;
}
