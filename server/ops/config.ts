// The operations settings (docs/operations.md): the metrics endpoint and the overload limits.
// Read by server/config.ts with the rest; a bad value is one more line of its report.

export interface OpsConfig {
  /** METRICS_PORT: the Prometheus endpoint's own port (off when unset). Never the public PORT in production. */
  metricsPort?: number;
  /** METRICS_HOST: where the metrics endpoint listens (HOST by default). */
  metricsHost: string;
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
  return { metricsPort, metricsHost: env.METRICS_HOST || server.host };
}
