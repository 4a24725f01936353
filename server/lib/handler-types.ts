// Handler signatures derived from the generated `operations` of an API: request parts and
// the success body come from the contract, so a handler cannot drift from it unnoticed.
import type { FastifyReply, FastifyRequest } from 'fastify';

type Part<Op, K extends string> = Op extends { parameters: Record<K, infer P> } ? (P extends undefined ? unknown : P) : unknown;

type BodyOf<Op> = Op extends { requestBody?: { content: infer C } } ? (C extends Record<string, infer B> ? B : unknown) : unknown;

type SuccessStatus = 200 | 201 | 202;
type SuccessOf<Op> = Op extends { responses: infer R }
  ? {
      [S in keyof R & SuccessStatus]: R[S] extends { content: infer C } ? C[keyof C] : undefined;
    }[keyof R & SuccessStatus]
  : never;

export type RequestOf<Op> = FastifyRequest<{
  Body: BodyOf<Op>;
  Querystring: Part<Op, 'query'>;
  Params: Part<Op, 'path'>;
  Headers: Part<Op, 'header'>;
}>;

/** A handler for one operation: it returns the success body, or sends through `reply` itself. */
// biome-ignore lint/suspicious/noConfusingVoidType: a handler that sent its answer returns nothing
export type Handler<Op> = (request: RequestOf<Op>, reply: FastifyReply) => Promise<SuccessOf<Op> | FastifyReply | void>;

/** The handlers of an API, keyed by operationId; a missing one answers 501 not-implemented. */
export type Handlers<Operations> = { [Id in keyof Operations]?: Handler<Operations[Id]> };
