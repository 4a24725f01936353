// Configuration, read once from the environment and validated at start.

export interface Config {
  /** TCP port to listen on. */
  port: number;
  /** Interface to listen on; 127.0.0.1 unless deliberately exposed. */
  host: string;
  /** Where the embedded database and uploads live. */
  dataDir: string;
  /** The public base URL of this server (issuer of tokens, links in documents). */
  publicUrl: string;
  /** pino log level. */
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
}

export class ConfigError extends Error {}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];
  const port = Number(env.PORT ?? 3000);
  if (!Number.isInteger(port) || port < 0 || port > 65535) problems.push(`PORT must be an integer 0-65535, got "${env.PORT}"`);
  const host = env.HOST ?? '127.0.0.1';
  const logLevel = (env.LOG_LEVEL ?? 'info') as Config['logLevel'];
  if (!LOG_LEVELS.includes(logLevel)) problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${env.LOG_LEVEL}"`);
  const publicUrl = env.PUBLIC_URL ?? `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  try {
    const url = new URL(publicUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') problems.push(`PUBLIC_URL must be http(s), got "${publicUrl}"`);
  } catch {
    problems.push(`PUBLIC_URL must be an absolute URL, got "${publicUrl}"`);
  }
  if (problems.length) throw new ConfigError(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
  return { port, host, dataDir: env.DATA_DIR ?? './data', publicUrl: publicUrl.replace(/\/$/, ''), logLevel };
}
