// Graceful shutdown on SIGTERM/SIGINT (bad-inputs F-14): app.close() stops accepting connections,
// answers new requests on kept-alive sockets 503 `unavailable` with Retry-After, lets requests in
// flight finish, ends event streams (each got `retry:` when it opened, so clients come back to
// another instance) and stops the workers, which release the leases they have not started. The
// process exits 0 when that is done, 1 if it fails, and 1 after SHUTDOWN_GRACE_MS whatever is
// still running (an orchestrator's kill would follow anyway; leases left then expire by themselves).
import type { FastifyInstance } from 'fastify';

export function exitOnSignals(app: FastifyInstance): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      const graceMs = app.config.shutdownGraceMs;
      app.log.info({ signal }, 'shutting down');
      setTimeout(() => {
        app.log.error({ graceMs }, 'shutdown grace period over; exiting');
        process.exit(1);
      }, graceMs).unref();
      app.close().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    });
  }
}
