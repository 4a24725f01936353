// Shared by the client generators (scripts/clients-python.mjs, scripts/clients-go.mjs): running a
// pinned tool and skipping the work when its inputs are those of the last run.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';

/** Runs a command; answers its stdout and stderr together, or prints them and exits 1 on failure. */
export function runOrExit(cmd, args, { cwd, env = process.env }) {
  const res = spawnSync(cmd, args, { cwd, env, encoding: 'utf8' });
  const output = `${res.stdout ?? ''}${res.stderr ?? ''}`;
  if (res.status !== 0) {
    process.stderr.write(output);
    console.error(`${cmd} ${args.join(' ')} failed (${res.error?.message ?? `exit ${res.status}`})`);
    process.exit(1);
  }
  return output;
}

/** A digest of the pins (text) and the input files, written to a stamp after a successful run. */
export function inputsDigest(pins, files) {
  const hash = createHash('sha256').update(pins);
  for (const file of files) hash.update(readFileSync(file));
  return hash.digest('hex');
}

export const isStamped = (stampFile, digest) => existsSync(stampFile) && readFileSync(stampFile, 'utf8') === digest;
