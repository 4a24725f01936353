// Starts a benchmark server as a child process and waits for the JSON line it prints when ready.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

// The server runs in this child itself, with tsx as a loader: tsx's CLI would put it in a
// grandchild, which a SIGKILL of the child (the crash test) leaves running.
const tsxLoader = new URL('../../node_modules/tsx/dist/loader.mjs', import.meta.url).href;

export interface Child<T> {
  info: T;
  process: ChildProcess;
  stop(): Promise<void>;
}

/**
 * `root`: another checkout of this repository (with its own node_modules) whose server to start
 * instead of this one's, for measuring a change against the code before it (bench/ab.ts).
 */
export async function startChild<T>(script: string, env: Record<string, string> = {}, root?: string): Promise<Child<T>> {
  const loader = root ? pathToFileURL(join(root, 'node_modules/tsx/dist/loader.mjs')).href : tsxLoader;
  const path = root ? join(root, 'bench/servers', script) : fileURLToPath(new URL(`../servers/${script}`, import.meta.url));
  const child = spawn(process.execPath, [...(process.env.BENCH_PROF ? ['--cpu-prof', '--cpu-prof-dir=/tmp/prof'] : []), '--import', loader, path], {
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'inherit'],
    ...(root ? { cwd: root } : {}),
  });
  // Seeding 100,000 contacts on PGlite takes over a minute on a loaded machine.
  const startSeconds = Number(env.START_TIMEOUT_SECONDS ?? 300);
  let timer: NodeJS.Timeout | undefined;
  const info = await new Promise<T>((resolve, reject) => {
    let buffer = '';
    timer = setTimeout(() => reject(new Error(`${script} did not start within ${startSeconds} s`)), startSeconds * 1000);
    child.stdout!.on('data', (chunk) => {
      buffer += chunk;
      // Log lines are JSON too: the ready line is the one that starts with its url.
      const line = buffer.split('\n').find((l) => l.startsWith('{"url":'));
      if (line) resolve(JSON.parse(line));
    });
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  }).finally(() => clearTimeout(timer));
  return {
    info,
    process: child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
