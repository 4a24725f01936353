// The event stream of one login session (SSE), authorised by its subscribe token.
//
// One bus subscription per instance fans `login.session` out to a Map<sessionId, Set<stream>>,
// and one timer sends every stream its heartbeat, so an open stream costs a small object and a
// PassThrough, not a subscription or a timer of its own. The push comes from the bus, so the
// instance holding the stream need not be the one that received the message.
//
// No event is lost between reading and subscribing: a stream is registered in the map first and
// reads login_session_events second; a push arriving meanwhile is kept on the stream, and an event
// committed before the read is in the table (NOTIFY is sent at commit, so it is never earlier).
// No event is lost to a notification that never came either (the LISTEN connection was
// reconnecting): when it is back, and at every heartbeat, the hub re-reads the final event of every
// session it holds a stream for and sends what the streams missed (`resync`).
import { RESOURCE_ID } from '#server/lib/ids.js';
import { PassThrough } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { operations } from '#generated/login/types.js';
import { authOf, registerScheme } from '#server/auth/authenticate.js';
import type { Handler } from '#server/lib/handler-types.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { Platform } from '#server/platform.js';
import { expireSessions, SESSION_EVENT, type SessionEventName } from './sessions.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** This instance's open login streams (startStreams, by startLogin). */
    loginStreams: StreamHub;
  }
}

declare module '../../auth/authenticate.js' {
  interface AuthKinds {
    subscribe_token: true;
  }
  interface AuthContext {
    /** The login session a subscribe token opens (kind `subscribe_token`). */
    sessionId?: string;
  }
}

const HEARTBEAT_MS = 15_000;
/** Sessions re-read per query by `resync`. */
const RESYNC_BATCH = 500;
const RETRY = 'retry: 2000\n\n';
/** Open streams per session on one instance (bad-inputs K6): a page needs one; reconnects replace it. */
export const STREAMS_PER_SESSION = 5;

interface FinalEvent {
  id: string;
  event: SessionEventName;
}

interface Stream {
  sessionId: string;
  out: PassThrough;
  /** Set once the handler has read the table; before that a push is only kept in `pending`. */
  open: boolean;
  pending?: FinalEvent;
  done: boolean;
}

const frame = (sessionId: string, e: FinalEvent) => `id: ${e.id}\nevent: ${e.event}\ndata: ${JSON.stringify({ event: e.event, sessionId })}\n\n`;

export class StreamHub {
  private readonly sessions = new Map<string, Set<Stream>>();
  private unsubscribe?: () => void;
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly platform: Platform,
    private readonly log?: (error: unknown) => void,
  ) {}

  start(): void {
    const offBus = this.platform.bus.subscribe(SESSION_EVENT, (event) => {
      const { sessionId, event: name, eventId } = event.data as { sessionId: string; event: SessionEventName; eventId: string };
      this.deliver(sessionId, { id: eventId, event: name });
    });
    const offReconnect = this.platform.store.onReconnect(() => void this.resync());
    this.unsubscribe = () => (offBus(), offReconnect());
    this.timer = setInterval(() => {
      this.heartbeat();
      void this.resync();
    }, HEARTBEAT_MS);
    this.timer.unref();
  }

  private deliver(sessionId: string, event: FinalEvent): void {
    for (const stream of this.sessions.get(sessionId) ?? []) {
      if (stream.open) this.finish(stream, event);
      else stream.pending ??= event;
    }
  }

  /**
   * Re-reads the final event of every session with a stream here and sends it to those streams:
   * what a lost notification would have brought. Answers how many sessions had one.
   */
  async resync(): Promise<number> {
    const ids = [...this.sessions.keys()];
    let found = 0;
    for (let i = 0; i < ids.length; i += RESYNC_BATCH) {
      try {
        const rows = await this.platform.store.db
          .selectFrom('login_session_events')
          .distinctOn('session_id')
          .select(['session_id', 'id', 'event'])
          .where('session_id', 'in', ids.slice(i, i + RESYNC_BATCH))
          .orderBy('session_id')
          .orderBy('id', 'desc')
          .execute();
        for (const row of rows) this.deliver(row.session_id, { id: String(row.id), event: row.event });
        found += rows.length;
      } catch (error) {
        // The database is away too: the next reconnect or heartbeat tries again.
        this.log?.(error);
      }
    }
    return found;
  }

  /** Ends every stream (shutdown): clients reconnect elsewhere after `retry`. */
  stop(): void {
    this.unsubscribe?.();
    clearInterval(this.timer);
    for (const set of this.sessions.values()) for (const stream of set) this.close(stream, RETRY);
  }

  heartbeat(): void {
    for (const set of this.sessions.values()) for (const stream of set) if (stream.open) stream.out.write(': heartbeat\n\n');
  }

  /** How many streams this instance holds (all, or for one session). */
  count(sessionId?: string): number {
    if (sessionId) return this.sessions.get(sessionId)?.size ?? 0;
    let n = 0;
    for (const set of this.sessions.values()) n += set.size;
    return n;
  }

  add(sessionId: string): Stream {
    const stream: Stream = { sessionId, out: new PassThrough(), open: false, done: false };
    let set = this.sessions.get(sessionId);
    if (!set) this.sessions.set(sessionId, (set = new Set()));
    set.add(stream);
    return stream;
  }

  /** Sends the final event and closes the stream (once, whoever calls first). */
  finish(stream: Stream, event: FinalEvent): void {
    this.close(stream, frame(stream.sessionId, event));
  }

  close(stream: Stream, last?: string): void {
    if (!stream.done) {
      stream.done = true;
      stream.out.end(last);
    }
    this.remove(stream);
  }

  /** Forgets a stream whose client went away (or that never opened). */
  remove(stream: Stream): void {
    const set = this.sessions.get(stream.sessionId);
    if (set?.delete(stream) && set.size === 0) this.sessions.delete(stream.sessionId);
  }
}

export function startStreams(app: FastifyInstance): StreamHub {
  const hub = new StreamHub(app.platform, (error) => app.log.warn({ err: error }, 'login streams: re-reading sessions failed'));
  app.decorate('loginStreams', hub);
  hub.start();
  // Before the server stops accepting: open streams would keep server.close() waiting (bad-inputs F-14).
  app.addHook('preClose', async () => hub.stop());
  return hub;
}

// The subscribe token, checked against the session's digest in constant time. No token, or one
// that belongs to no session, is 401 whatever the id (authentication comes first). A real token
// of another workspace's session, on an id that is unknown or of another workspace, is 404: the
// same answer as an unknown id (bad-inputs B1), so a token holder cannot tell another workspace's
// sessions from unknown ones. Another session's token of the same workspace is 401. All are
// answered here, before the handler opens anything.
const notFound = (sessionId: string) => new HttpProblem(404, 'not-found', `No login session ${sessionId}.`);

registerScheme(
  'SubscribeToken',
  {
    async verify(request, { app }) {
      const { sessionId } = request.params as { sessionId?: string };
      const token = (request.query as Record<string, unknown>).token;
      if (!sessionId || typeof token !== 'string' || !token) return null;
      // Path ids are validated after authentication: one that no session can have is not looked up.
      const session = !RESOURCE_ID.test(sessionId)
        ? undefined
        : await app.platform.store.db
            .selectFrom('login_sessions')
            .select(['id', 'workspace_id', 'subscribe_token_digest'])
            .where('id', '=', sessionId)
            .executeTakeFirst();
      if (session && app.platform.secrets.matches(token, session.subscribe_token_digest)) {
        return { workspaceId: session.workspace_id, kind: 'subscribe_token', sessionId: session.id, scopes: [] };
      }
      const holder = await app.platform.store.db
        .selectFrom('login_sessions')
        .select('workspace_id')
        .where('subscribe_token_digest', '=', app.platform.secrets.digest(token))
        .executeTakeFirst();
      if (holder && holder.workspace_id !== session?.workspace_id) throw notFound(sessionId);
      return null;
    },
    challenge: (api) => `SubscribeToken realm="${api}"`,
  },
  { api: 'login' },
);

/** `Last-Event-ID` as a number; anything else counts as absent. */
function lastEventId(header: unknown): bigint | undefined {
  return typeof header === 'string' && /^\d{1,18}$/.test(header) ? BigInt(header) : undefined;
}

export const streamLoginSessionEvents: Handler<operations['streamLoginSessionEvents']> = async (request, reply) => {
  const { platform } = request.server;
  const sessionId = authOf(request).sessionId!;
  const hub = request.server.loginStreams;
  if (hub.count(sessionId) >= STREAMS_PER_SESSION) {
    throw new HttpProblem(429, 'rate-limited', `At most ${STREAMS_PER_SESSION} streams per session; close one first.`, {}, { 'retry-after': '5' });
  }
  const since = lastEventId(request.headers['last-event-id']);
  const stream = hub.add(sessionId);
  let final: FinalEvent | undefined;
  let session: { status: string; expires_at: Date } | undefined;
  try {
    const db = platform.store.db;
    // At most one event per session: the final one.
    const row = await db
      .selectFrom('login_session_events')
      .select(['id', 'event'])
      .where('session_id', '=', sessionId)
      .orderBy('id', 'desc')
      .executeTakeFirst();
    session = await db.selectFrom('login_sessions').select(['status', 'expires_at']).where('id', '=', sessionId).executeTakeFirst();
    final = row ? { id: String(row.id), event: row.event } : stream.pending;
  } catch (error) {
    hub.remove(stream);
    throw error;
  }
  if (final && since !== undefined && since >= BigInt(final.id)) {
    hub.remove(stream); // the client has the final event: 204 stops EventSource
    return reply.code(204).send();
  }
  reply.raw.once('close', () => {
    hub.remove(stream);
    if (!stream.done) stream.out.destroy();
  });
  stream.out.write(RETRY);
  if (final) hub.finish(stream, final);
  else stream.open = true; // no await since the read: a push cannot have slipped in between
  reply
    .code(200)
    .headers({ 'cache-control': 'no-store, no-transform', 'x-accel-buffering': 'no', connection: 'keep-alive' })
    .type('text/event-stream; charset=utf-8');
  if (!final && session?.status === 'pending' && session.expires_at.getTime() <= platform.now().getTime()) {
    // Past its time but not swept yet: expire it now; the `expired` push reaches this stream.
    void expireSessions(platform, sessionId).catch((error) => request.log.error({ err: error }, 'login expiry failed'));
  }
  return reply.send(stream.out);
};
