// Readiness (`GET /readyz`), apart from liveness (`GET /healthz`): whether this instance should
// get traffic now. A load balancer or orchestrator takes it out of rotation while a check fails
// (the database out of reach, the schema behind this code) or while it drains after SIGTERM, and
// puts it back by itself once the check passes again; the process is not restarted for that.
// Checks are pluggable: each dependency that the instance cannot serve without (the database here;
// Redis or object storage where they are configured) adds one with `platform.readiness.add`.

/** Resolves when the dependency is usable; rejects (or outlasts the timeout) when it is not. */
export type ReadinessCheck = () => Promise<void>;

export interface ReadinessReport {
  ready: boolean;
  draining: boolean;
  /** Each check's outcome by name: `ok`, `failing` or `timeout`. Never an error's text. */
  checks: Record<string, 'ok' | 'failing' | 'timeout'>;
}

export class Readiness {
  private readonly checks = new Map<string, ReadinessCheck>();
  private drainingSince?: number;

  constructor(private readonly timeoutMs = 2_000) {}

  /** Adds a named check; a name is added once (a second add is a wiring bug). */
  add(name: string, check: ReadinessCheck): void {
    if (this.checks.has(name)) throw new Error(`readiness check ${name} is added twice`);
    this.checks.set(name, check);
  }

  /** From SIGTERM (Fastify's preClose) on: not ready, whatever the checks say. */
  drain(): void {
    this.drainingSince ??= Date.now();
  }

  get draining(): boolean {
    return this.drainingSince !== undefined;
  }

  /** Runs every check at once, each bounded by the timeout, so that a hung dependency answers too. */
  async report(): Promise<ReadinessReport> {
    const names = [...this.checks.keys()];
    const outcomes = await Promise.all(names.map((name) => this.run(this.checks.get(name)!)));
    const checks = Object.fromEntries(names.map((name, i) => [name, outcomes[i]!]));
    return { ready: !this.draining && outcomes.every((o) => o === 'ok'), draining: this.draining, checks };
  }

  private async run(check: ReadinessCheck): Promise<'ok' | 'failing' | 'timeout'> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), this.timeoutMs);
    });
    try {
      return await Promise.race([check().then(() => 'ok' as const), timeout]);
    } catch {
      return 'failing';
    } finally {
      clearTimeout(timer);
    }
  }
}
