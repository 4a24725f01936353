// Learning a login session's outcome: the event stream (SSE, authorised by the subscribe token,
// safe in a browser), polling the status every 2 s (server side, with the Login API key), and
// `waitForLogin`, which uses the stream and falls back to polling when it cannot connect.
//
// The stream sends one event per session, the final one (`verified` or `expired`), then closes.
// EventSource reconnects after a dropped connection sending `Last-Event-ID`; the server answers
// 204 when that id is the final event already, which ends the stream without an outcome.
import { EventSource } from 'eventsource';
import type { components } from '../generated/login/types.js';
import type { LoginClient } from './login.js';
import { isProblem, unwrap } from './problems.js';

export type LoginSessionStatus = components['schemas']['LoginSessionStatus'];

export interface LoginStreamEvent {
  event: 'verified';
  sessionId: string;
  /** The SSE id, to resume with `lastEventId`. */
  eventId: string;
}

/** The session expired (the `expired` event, or 410 from status): start a new one. */
export class LoginSessionExpiredError extends Error {
  constructor(readonly sessionId: string) {
    super(`Login session ${sessionId} expired; start a new one.`);
    this.name = 'LoginSessionExpiredError';
  }
}

/** The stream could not give an outcome: `status` is the HTTP status when there was one (401, 404, 429, 204...). */
export class LoginStreamError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'LoginStreamError';
  }
}

export interface WatchOptions {
  baseUrl: string;
  sessionId: string;
  subscribeToken: string;
  signal?: AbortSignal;
  /** Resume after a reload: the `eventId` last seen (the server answers 204 if it was the final one). */
  lastEventId?: string;
  /** Rejects with LoginStreamError if the first connection is not open within this time (default: no limit). */
  connectTimeoutMs?: number;
  fetch?: typeof globalThis.fetch;
}

const aborted = (signal: AbortSignal) => (signal.reason instanceof Error ? signal.reason : new DOMException('Aborted', 'AbortError'));

/** Resolves at `verified`; rejects with LoginSessionExpiredError at `expired`, LoginStreamError when the server refuses or ends the stream. */
export function watchLoginSession(options: WatchOptions): Promise<LoginStreamEvent> {
  const { baseUrl, sessionId, subscribeToken, signal, lastEventId, connectTimeoutMs } = options;
  const base = options.fetch ?? globalThis.fetch;
  const url = new URL(`/v1/auth/chatapp/events/${encodeURIComponent(sessionId)}`, baseUrl);
  url.searchParams.set('token', subscribeToken);
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(aborted(signal));
    let first = true;
    const es = new EventSource(url, {
      fetch: (input, init) => {
        // EventSource sends Last-Event-ID itself on reconnects; a resumed watch sends it from the start.
        const headers = new Headers(init?.headers);
        if (first && lastEventId && !headers.has('last-event-id')) headers.set('Last-Event-ID', lastEventId);
        first = false;
        return base(input, { ...init, headers });
      },
    });
    let opened = false;
    const timer =
      connectTimeoutMs === undefined
        ? undefined
        : setTimeout(() => opened || finish(new LoginStreamError(`The login stream did not open within ${connectTimeoutMs} ms.`)), connectTimeoutMs);
    const onAbort = () => finish(aborted(signal!));
    function finish(error?: Error, value?: LoginStreamEvent) {
      es.close();
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      if (error) reject(error);
      else resolve(value!);
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    es.addEventListener('open', () => (opened = true));
    es.addEventListener('verified', (e) => finish(undefined, { event: 'verified', sessionId, eventId: e.lastEventId }));
    es.addEventListener('expired', () => finish(new LoginSessionExpiredError(sessionId)));
    es.addEventListener('error', (e) => {
      const code = (e as { code?: number }).code;
      if (code === 410) finish(new LoginSessionExpiredError(sessionId));
      else if (es.readyState === EventSource.CLOSED) {
        finish(
          new LoginStreamError(
            code === 204 ? 'The stream has no more events (the final one was delivered before).' : `The login stream was refused (${code ?? 'network'}).`,
            code,
          ),
        );
      } else if (!opened) {
        // Never connected: report it (waitForLogin polls instead) rather than retry unseen.
        // Once open, a dropped connection is left to EventSource, which reconnects.
        finish(new LoginStreamError(`The login stream cannot connect (${e.message ?? 'network error'}).`, code));
      }
    });
  });
}

export interface PollOptions {
  intervalMs?: number;
  signal?: AbortSignal;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(aborted(signal));
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(timer), reject(aborted(signal))), { once: true });
  });

/**
 * Asks the status every `intervalMs` (2 s, the pace the API allows) until `success`, which it
 * returns (with `verificationToken`); 410 rejects with LoginSessionExpiredError, other problems
 * with ProblemError. `client` must carry the Login app's API key.
 */
export async function pollLoginSession(client: LoginClient, sessionId: string, { intervalMs = 2000, signal }: PollOptions = {}): Promise<LoginSessionStatus> {
  for (;;) {
    let status: LoginSessionStatus;
    try {
      status = unwrap(await client.GET('/v1/auth/chatapp/status/{sessionId}', { params: { path: { sessionId } }, signal }));
    } catch (error) {
      if (isProblem(error, 'expired')) throw new LoginSessionExpiredError(sessionId);
      throw error;
    }
    if (status.status === 'success') return status;
    if (status.status === 'expired') throw new LoginSessionExpiredError(sessionId);
    await sleep(intervalMs, signal);
  }
}

export interface WaitOptions extends Omit<WatchOptions, 'fetch'>, PollOptions {
  /** A Login client with the app's API key (for the status, which carries the verification token). */
  client: LoginClient;
  /** How long the stream may take to open before polling takes over (default 10 s). */
  connectTimeoutMs?: number;
}

/**
 * The outcome with its verification token: the stream tells when, one status call fetches the
 * token. When the stream cannot connect or is refused it polls instead; `expired` rejects.
 */
export async function waitForLogin(options: WaitOptions): Promise<LoginSessionStatus> {
  const { client, sessionId } = options;
  try {
    await watchLoginSession({ ...options, connectTimeoutMs: options.connectTimeoutMs ?? 10_000 });
  } catch (error) {
    if (!(error instanceof LoginStreamError)) throw error;
  }
  return pollLoginSession(client, sessionId, options);
}
