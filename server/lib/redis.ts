// The Redis connection of an instance (REDIS_URL): where the fleet's rate limits and failure
// counters live (server/plugins/rate-limits.ts), so that N instances give exactly the documented
// limits. Redis is a help, never a dependency: commands never queue while it is away (they fail
// at once) and time out quickly, and the limiter then lets requests through (fail open, one
// warning per outage) until it is back; ioredis reconnects by itself.
import { Redis } from 'ioredis';

/** A command slower than this counts as Redis being away (a request must not wait on it). */
const COMMAND_TIMEOUT_MS = 500;
/** How long start-up waits for the first connection before serving with limits failing open. */
const FIRST_CONNECT_MS = 3_000;

export type RedisStateListener = (up: boolean, error?: Error) => void;

export class SharedRedis {
  readonly client: Redis;
  private up = false;
  private readonly listeners = new Set<RedisStateListener>();

  constructor(url: string) {
    this.client = new Redis(url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      commandTimeout: COMMAND_TIMEOUT_MS,
      connectTimeout: 2_000,
      enableAutoPipelining: true,
      // Reconnect quickly at first, then every 2 s, for ever: limits resume when it returns.
      retryStrategy: (attempt) => Math.min(50 * 2 ** attempt, 2_000),
      lazyConnect: true,
    });
    this.client.on('ready', () => this.set(true));
    this.client.on('error', (error: Error) => this.set(false, error));
    this.client.on('close', () => this.set(false));
  }

  /** Connects; answers whether Redis was reachable within FIRST_CONNECT_MS (the caller logs). */
  async start(): Promise<boolean> {
    this.client.connect().catch(() => undefined); // failures arrive as 'error' events and retries
    if (this.client.status === 'ready') return true;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.client.off('ready', ready);
        resolve(false);
      }, FIRST_CONNECT_MS);
      timer.unref();
      const ready = () => {
        clearTimeout(timer);
        resolve(true);
      };
      this.client.once('ready', ready);
    });
  }

  /** Whether commands can be sent now (no waiting: the limiter fails open otherwise). */
  get ready(): boolean {
    return this.client.status === 'ready';
  }

  /** One PING round trip; throws when Redis is not reachable (readiness checks). */
  async ping(): Promise<void> {
    if ((await this.client.ping()) !== 'PONG') throw new Error('Redis did not answer PONG');
  }

  /** Hears every change between reachable and not (once per change, not per failed command). */
  onChange(listener: RedisStateListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private set(up: boolean, error?: Error) {
    if (up === this.up) return;
    this.up = up;
    for (const listener of this.listeners) listener(up, error);
  }

  async close(): Promise<void> {
    this.listeners.clear();
    this.client.disconnect();
  }
}
