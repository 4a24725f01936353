// The operations settings (docs/operations.md): the metrics endpoint and the overload limits.
// Read by server/config.ts with the rest; a bad value is one more line of its report.
import type { OverloadLimits } from './overload.js';

export interface OpsConfig {
  /** METRICS_PORT: the Prometheus endpoint's own port (off when unset). Never the public PORT in production. */
  metricsPort?: number;
  /** METRICS_HOST: where the metrics endpoint listens (HOST by default). */
  metricsHost: string;
  /** The overload guard (server/ops/overload.ts); maxInFlight 0 turns it off. */
  overload: OverloadLimits;
}

export function loadOpsConfig(env: NodeJS.ProcessEnv, server: { port: number; host: string; production: boolean }, problems: string[]): OpsConfig {
  let metricsPort: number | undefined;
  const text = env.METRICS_PORT;
  if (text !== undefined && text !== '') {
    if (/^\d{1,5}$/.test(text) && Number(text) <= 65535) metricsPort = Number(text);
    else problems.push(`METRICS_PORT must be an integer 0-65535, got "${text}"`);
    if (server.production && metricsPort !== undefined && metricsPort === server.port)
      problems.push('METRICS_PORT must differ from PORT when NODE_ENV=production: metrics are for the operator, not the public');
  }
  const whole = (name: string, fallback: number, max: number) => {
    const value = env[name];
    if (value === undefined || value === '') return fallback;
    if (/^\d+$/.test(value) && Number(value) <= max) return Number(value);
    problems.push(`${name} must be an integer 0-${max}, got "${value}"`);
    return fallback;
  };
  const maxInFlight = whole('OVERLOAD_MAX_IN_FLIGHT', 256, 1_000_000);
  const overload = {
    maxInFlight,
    priorityReserve: whole('OVERLOAD_PRIORITY_RESERVE', Math.ceil(maxInFlight / 2), 1_000_000),
    retryAfterSeconds: 2,
    // While the event loop is saturated, the limit is the measured throughput × this, and a request
    // that waited longer is refused (docs/operations.md). 100 ms keeps the admitted requests' p99
    // within a 250 ms budget under three times the capacity. 0: off, the ceiling alone.
    queueMs: whole('OVERLOAD_QUEUE_MS', 100, 60_000),
    // Off unless set: a mean over every answer also holds exports and slow reports, which would
    // shrink the limit under ordinary traffic (schemathesis found 503s at a handful in flight).
    targetMs: whole('OVERLOAD_TARGET_MS', 0, 60_000),
    maxLagMs: whole('OVERLOAD_MAX_LAG_MS', 0, 60_000),
  };
  return { metricsPort, metricsHost: env.METRICS_HOST || server.host, overload };
}
