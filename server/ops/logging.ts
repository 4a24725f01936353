// One log stream: the request lines of a contract operation carry its operationId next to the
// request id (`reqId`), so that every line a request writes (Fastify's, the handler's, the
// error handler's) can be found by operation as well as by request. The trace id is added by
// the logger's mixin when tracing is on (server/ops/tracing.ts).
import type { FastifyInstance } from 'fastify';

export function bindOperationIds(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const operationId = (route.config as { operation?: { operationId: string } } | undefined)?.operation?.operationId;
    if (!operationId || route.childLoggerFactory) return;
    // Called when the request is routed, before its first line: the binding is on all of them.
    route.childLoggerFactory = (logger, bindings, options) => logger.child({ ...bindings, operationId }, options);
  });
}

/**
 * Node's process warnings (a deprecation, MaxListenersExceededWarning, a dependency's
 * `process.emitWarning`, such as the AWS SDK's Node version notice) are printed by Node itself as
 * plain text on stderr, outside the log stream. The server sends them through its logger instead,
 * as `warn` lines with the warning's name and code; called once the logger exists.
 */
export function logProcessWarnings(log: { warn(fields: object, msg: string): void }): () => void {
  const previous = process.listeners('warning');
  process.removeAllListeners('warning'); // Node's own printer is one of them
  const listener = (warning: Error & { code?: string }) =>
    log.warn({ component: 'process', warning: warning.name, ...(warning.code ? { code: warning.code } : {}) }, warning.message);
  process.on('warning', listener);
  return () => {
    process.removeListener('warning', listener);
    for (const restored of previous) process.on('warning', restored);
  };
}
