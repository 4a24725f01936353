// What stops a start before the server serves, each said in one line with what to do instead of a
// stack trace: DATA_DIR unusable or held by another server, the port taken, PostgreSQL refusing
// the credentials or missing the database. server.ts prints the line and exits non-zero.
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import type { Config } from './config.js';

export class StartError extends Error {}

/** DATA_DIR exists (made if missing), is a directory and takes a file. */
export function prepareDataDir(dataDir: string): void {
  const where = `DATA_DIR ${resolve(dataDir)}`;
  try {
    mkdirSync(dataDir, { recursive: true });
    if (!statSync(dataDir).isDirectory()) throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR' });
    const probe = join(dataDir, `.write-check-${process.pid}`);
    writeFileSync(probe, '');
    rmSync(probe);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOTDIR' || code === 'EEXIST')
      throw new StartError(`Cannot start: ${where} is not a directory (it or a parent is a file). Point DATA_DIR at a directory, or remove the file.`);
    if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS')
      throw new StartError(
        `Cannot start: ${where} is not writable (${code}). Give the user running the server write access to it, or point DATA_DIR at a writable directory.`,
      );
    if (code === 'ENOSPC') throw new StartError(`Cannot start: ${where} is on a full disk. Free some space, or point DATA_DIR elsewhere.`);
    throw error;
  }
}

const PID_FILE = 'server.pid';

/**
 * The embedded store is one process's: a second server (or `npm run demo:credentials`) on the same
 * DATA_DIR would corrupt it. A pid file names the holder; one left by a process that is gone is
 * taken over. Released when this process exits.
 */
export function lockDataDir(dataDir: string, advice = 'Stop it first, or give this one its own DATA_DIR'): void {
  const file = join(dataDir, PID_FILE);
  const holder = heldBy(file);
  if (holder !== undefined)
    throw new StartError(`Cannot start: DATA_DIR ${resolve(dataDir)} is in use by a running server (pid ${holder}). ${advice} (if none runs, delete ${file}).`);
  writeFileSync(file, String(process.pid));
  process.once('exit', () => {
    if (heldBy(file) === undefined) rmSync(file, { force: true });
  });
}

/** The live process other than this one named by the pid file, if any. */
function heldBy(file: string): number | undefined {
  let pid: number;
  try {
    pid = Number(readFileSync(file, 'utf8').trim());
  } catch {
    return undefined;
  }
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return undefined;
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return undefined;
  }
  // After a restart (a container's, with DATA_DIR on a volume) the pid may be another program's.
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('node') ? pid : undefined;
  } catch {
    return existsSync('/proc/self') ? undefined : pid; // no /proc (macOS): alive is all we know
  }
}

/** Binds HOST:PORT and lets go at once, so that a taken port is said before the app is built. */
export function checkPort(host: string, port: number): Promise<void> {
  if (port === 0) return Promise.resolve();
  return new Promise((ok, fail) => {
    const probe = createServer();
    probe.once('error', (error) => fail(listenFailure(error, host, port) ?? error));
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => ok()));
  });
}

/** The line for an error of `listen`, or undefined when it is not one a person can act on. */
export function listenFailure(error: unknown, host: string, port: number): StartError | undefined {
  const code = (error as NodeJS.ErrnoException).code;
  const next = port === 65535 ? 3000 : port + 1;
  if (code === 'EADDRINUSE')
    return new StartError(`Cannot start: port ${port} on ${host} is in use by another program. Stop it, or start on another port: PORT=${next} npm start`);
  if (code === 'EACCES')
    return new StartError(
      `Cannot start: port ${port} needs privileges this user lacks. Use a port above 1023 (PORT=${port < 1024 ? 3000 : next}), or a reverse proxy.`,
    );
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN')
    return new StartError(`Cannot start: HOST ${host} is not an address of this machine. Use 127.0.0.1 (local only) or 0.0.0.0 (every interface).`);
  return undefined;
}

/** PostgreSQL's answers at connection time that are the operator's to fix: one line each. */
export function databaseFailure(error: unknown, databaseUrl: string): StartError | undefined {
  const code = (error as { code?: unknown }).code;
  const url = new URL(databaseUrl);
  const user = decodeURIComponent(url.username) || 'postgres';
  const database = decodeURIComponent(url.pathname.slice(1)) || user;
  const server = `${url.hostname}:${url.port || 5432}`;
  if (code === '28P01')
    return new StartError(`Cannot start: PostgreSQL at ${server} refused the password of user "${user}". Check the user and password in DATABASE_URL.`);
  if (code === '28000')
    return new StartError(
      `Cannot start: PostgreSQL at ${server} refused user "${user}" (${(error as Error).message}). Check the user in DATABASE_URL and pg_hba.conf.`,
    );
  if (code === '3D000') {
    const flags = [`-h ${url.hostname}`, `-p ${url.port || 5432}`, `-U ${user}`].join(' ');
    return new StartError(`Cannot start: database "${database}" does not exist on ${server}. Create it: createdb ${flags} ${database}`);
  }
  return undefined;
}

/** The one line for a failed start, or undefined for an error that is a bug (printed in full). */
export function describeStartFailure(error: unknown, config: Pick<Config, 'databaseUrl'> | undefined): string | undefined {
  if (error instanceof StartError) return error.message;
  if (config?.databaseUrl) return databaseFailure(error, config.databaseUrl)?.message;
  return undefined;
}
