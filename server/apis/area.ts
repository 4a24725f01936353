// An area is one part of the product, found in one folder: the contract operations it handles,
// its routes outside the contract (pages, viewers, receivers), its background work (workers,
// timers, bus subscriptions) and its state. `app.ts` lists the areas; `mountAreas` turns the
// list into routes (through fastify-openapi-glue), one request pipeline per operation, and
// registers each area's plugin.
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler, RouteHandlerMethod, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';
import openapiGlue from 'fastify-openapi-glue';
import type { operations as AccountOperations } from '#generated/account/types.js';
import type { operations as ConnectOperations } from '#generated/connect/types.js';
import type { operations as LoginOperations } from '#generated/login/types.js';
import type { operations as MessagingOperations } from '#generated/messaging/types.js';
import { authenticator } from '../auth/authenticate.js';
import { API_NAMES, contractOperations, routingDocument, type ApiName, type Operation } from '../contract.js';
import type { Handlers } from '../lib/handler-types.js';
import { problem, sendProblem } from '../lib/problems.js';
import { multipartUploads } from '../plugins/body-parsers.js';

interface OperationsOf {
  account: AccountOperations;
  connect: ConnectOperations;
  login: LoginOperations;
  messaging: MessagingOperations;
}

export interface Area {
  /** `api/part`, e.g. `messaging/campaigns`: names the plugin and start-up errors. */
  name: string;
  /** The contract operations this area handles, by API and operationId. */
  handlers?: { [A in ApiName]?: Handlers<OperationsOf[A]> };
  /** Route options beyond the pipeline, by operationId (an own error format, a body hook). */
  routes?: Record<string, Partial<RouteOptions>>;
  /** Operations of the contract this server does not implement yet: they answer 501. */
  notImplemented?: string[];
  /** Everything else the area does in an app, started and stopped with it; state lives on the app. */
  plugin?: (app: FastifyInstance) => Promise<void> | void;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The contract operation a route serves (absent on routes outside the contract). */
    operation?: Operation;
  }
}

interface Entry {
  area: Area;
  handler?: RouteHandlerMethod;
  routes?: Partial<RouteOptions>;
}

/**
 * Who handles each operation of the contract; an operation handled twice, or not at all, is an
 * error naming it (buildApp checks before it opens anything).
 */
export function handlerTable(areas: readonly Area[]): Map<string, Entry> {
  const table = new Map<string, Entry>();
  const known = new Set(contractOperations().map((operation) => keyOf(operation.api, operation.operationId)));
  const claim = (key: string, entry: Entry) => {
    if (!known.has(key)) throw new Error(`${entry.area.name} handles ${key}, which the contract does not have`);
    const other = table.get(key);
    if (other) throw new Error(`operation ${key} is handled by both ${other.area.name} and ${entry.area.name}`);
    table.set(key, entry);
  };
  for (const area of areas) {
    for (const api of API_NAMES) {
      for (const [operationId, handler] of Object.entries(area.handlers?.[api] ?? {})) {
        claim(keyOf(api, operationId), { area, handler: handler as RouteHandlerMethod, routes: area.routes?.[operationId] });
      }
    }
    for (const operationId of area.notImplemented ?? []) {
      const apis = contractOperations().filter((operation) => operation.operationId === operationId);
      if (!apis.length) throw new Error(`${area.name} lists ${operationId} as not implemented, which the contract does not have`);
      for (const { api } of apis) claim(keyOf(api, operationId), { area });
    }
  }
  const missing = [...known].filter((key) => !table.has(key));
  if (missing.length) throw new Error(`operations nobody handles (give them a handler, or list them in an area's notImplemented): ${missing.join(', ')}`);
  return table;
}

const keyOf = (api: ApiName, operationId: string) => `${api}:${operationId}`;

function notImplemented(operationId: string): RouteHandlerMethod {
  return async (_request: FastifyRequest, reply: FastifyReply) =>
    sendProblem(
      reply,
      problem(501, 'not-implemented', `${operationId} is in the contract but not implemented by this server yet.`, { operation_id: operationId }),
    );
}

/**
 * Every contract operation as a route, then each area's plugin (in list order). fastify-openapi-glue
 * mounts the operations of each document (the contract loader's parse, in the form glue reads
 * cheapest: `routingDocument`); its `operationResolver` answers with the whole route from the
 * handler table. An operation's pipeline: authenticate in `onRequest`, before any body byte is
 * read (server/auth/); the rate limit by credential, in the same hook; the media-type guard
 * (lib/request-body); the body read and bounded; validation against the contract (the app's one
 * validator compiler: glue adds no validator of its own); the handler; serialization from the
 * contract's response schemas. Glue's `securityHandlers` are not used: they run as `preHandler`,
 * after the body is read and validated.
 */
export async function mountAreas(app: FastifyInstance, areas: readonly Area[], table: Map<string, Entry>): Promise<void> {
  const mounted = new Set<string>();
  const takesMultipart = (operation: Operation) => operation.bodyTypes.includes('multipart/form-data');
  await glue(app, table, mounted, (operation) => !takesMultipart(operation));
  // The operations that take uploads, in a context with the multipart parser and its hooks.
  await app.register(async (uploads: FastifyInstance) => {
    await multipartUploads(uploads);
    await glue(uploads, table, mounted, takesMultipart);
  });
  const unmounted = contractOperations().filter((operation) => !mounted.has(keyOf(operation.api, operation.operationId)));
  if (unmounted.length)
    throw new Error(`operations of the contract not mounted: ${unmounted.map((operation) => keyOf(operation.api, operation.operationId)).join(', ')}`);
  for (const area of areas) {
    const plugin = area.plugin;
    // Not encapsulated: the area's decorations and hooks are the app's.
    if (plugin) await app.register(fp(async (instance: FastifyInstance) => plugin(instance), { name: area.name }));
  }
}

/** fastify-openapi-glue over each API's operations that `include` picks, mounted in `app`. */
async function glue(app: FastifyInstance, table: Map<string, Entry>, mounted: Set<string>, include: (operation: Operation) => boolean): Promise<void> {
  for (const api of API_NAMES) {
    const operations = contractOperations(api).filter(include);
    if (!operations.length) continue;
    const byId = new Map(operations.map((operation) => [operation.operationId, operation]));
    await app.register(openapiGlue, {
      specification: routingDocument(api, operations),
      operationResolver: (operationId, method, path) => {
        const operation = byId.get(operationId);
        if (!operation || operation.method !== method || operation.path !== path)
          throw new Error(`fastify-openapi-glue asked for ${method} ${path} (${api}:${operationId}), which the contract does not have`);
        mounted.add(keyOf(api, operationId));
        return route(app, operation, table);
      },
    });
  }
}

/** The route of one operation: glue gives its method and URL, the rest is ours. */
function route(app: FastifyInstance, operation: Operation, table: Map<string, Entry>): RouteOptions {
  const entry = table.get(keyOf(operation.api, operation.operationId))!;
  const own = entry.routes ?? {};
  return {
    ...own,
    method: operation.method,
    url: operation.url,
    schema: operation.schema,
    // The operation's limit is a step of its pipeline (below), not the plugin's own hook.
    config: { ...own.config, operation, rateLimit: false },
    onRequest: [pipeline(app, operation, own.config?.rateLimit !== false), ...[own.onRequest ?? []].flat()],
    handler: entry.handler ?? notImplemented(operation.operationId),
  } as RouteOptions;
}

/**
 * The first steps of an operation's pipeline, compiled at start into one callback hook:
 * authenticate (its schemes resolved once), then count the request in the bucket of the
 * credential it proved (or of its IP), without a promise when the credential is cached.
 */
function pipeline(app: FastifyInstance, operation: Operation, limited: boolean): onRequestHookHandler {
  const authenticate = authenticator(app, operation);
  if (!limited) return authenticate;
  return (request, reply, done) =>
    authenticate(request, reply, (error?: Error) => {
      if (error) return done(error);
      try {
        // A promise only with the shared (Redis) store.
        const counting = app.limitOperation(request, reply);
        if (counting) return void counting.then(() => done(), done);
      } catch (problem) {
        return done(problem as Error);
      }
      done();
    });
}

/** operationIds that have a handler, per API (the README's list, the contract suite). */
export function implementedOperations(areas: readonly Area[], api: ApiName): Set<string> {
  return new Set(areas.flatMap((area) => Object.keys(area.handlers?.[api] ?? {})));
}
