// Where a test run's time goes (issue: fast feedback). With TEST_PHASES_DIR set, every store
// start-up, migration and app build is timed, and every test file's wall and CPU time is
// recorded (wall less CPU is time spent waiting), as JSON lines in one file per worker process;
// `node scripts/test-phases.mjs <dir>` adds them up. Without it, nothing is recorded.
import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.env.TEST_PHASES_DIR;
if (dir) mkdirSync(dir, { recursive: true });

export type Phase = 'store' | 'reset' | 'migrations' | 'build' | 'file';

export function record(phase: Phase, ms: number, extra: Record<string, unknown> = {}): void {
  if (!dir) return;
  appendFileSync(join(dir, `${process.pid}.jsonl`), `${JSON.stringify({ phase, ms: Math.round(ms), ...extra })}\n`);
}

/** Runs `fn`, recording its duration under `phase` when TEST_PHASES_DIR is set. */
export async function timed<T>(phase: Phase, fn: () => Promise<T>): Promise<T> {
  if (!dir) return fn();
  const started = performance.now();
  try {
    return await fn();
  } finally {
    record(phase, performance.now() - started);
  }
}
