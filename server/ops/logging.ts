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
