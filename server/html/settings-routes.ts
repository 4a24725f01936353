// The routing every settings page shares: a signed-in owner or a redirect to sign-in (with
// `next`), ids in the URL checked for shape (a malformed or foreign id answers the page's 404),
// and form posts refused (403, nothing changed) without this site's origin and the CSRF token.
// An API refusal (4xx HttpProblem) re-renders the page with its message and the form as sent;
// anything else becomes an error page without internals.
//
// Routes may be added before the CSRF plugin is registered (the Connect area adds its page
// early), so `csrfProtection` is looked up when a request arrives.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, preHandlerHookHandler } from 'fastify';
import type { AuthContext } from '../auth/authenticate.js';
import { SIGN_IN_PATH, currentOwner, type SignedInOwner } from '../auth/owner-session.js';
import type { Handler } from '../lib/handler-types.js';
import { HttpProblem } from '../lib/problems.js';
import { sendFormPage } from './form-layout.js';
import { refuseCrossSitePost } from './forms.js';
import { html, type Html } from './html.js';
import { problemMessage, sendSettingsPage } from './settings-layout.js';

/** What an action leaves on the page it re-renders. */
export interface Extras {
  notice?: Html;
  error?: string;
  /** The fields as posted, to fill the form again after a refusal. */
  form?: Record<string, string | string[]>;
}

export interface PageContext {
  request: FastifyRequest;
  reply: FastifyReply;
  owner: SignedInOwner;
  csrf: string;
  params: Record<string, string>;
}

export interface SettingsPage {
  path: string;
  title: string;
  /** The nav entry it belongs to (its own path unless a sub-page). */
  section?: string;
  /** Shape of each path parameter; a mismatch is the page's 404. */
  ids?: Record<string, RegExp>;
  render(ctx: PageContext, extras: Extras): Promise<Html>;
}

export type Action = (ctx: PageContext) => Promise<Extras | FastifyReply>;

/** The success body (200, 201 or 202) of a generated operation. */
export type Ok<Op> = Op extends { responses: infer R }
  ? { [S in keyof R & (200 | 201 | 202)]: R[S] extends { content: { 'application/json': infer B } } ? B : never }[keyof R & (200 | 201 | 202)]
  : never;

export const formError = (detail: string) => new HttpProblem(400, 'validation', detail);

const formOf = (body: unknown): Record<string, string | string[]> => {
  const out: Record<string, string | string[]> = {};
  if (body && typeof body === 'object') {
    for (const [k, v] of Object.entries(body)) if (k !== '_csrf' && (typeof v === 'string' || Array.isArray(v))) out[k] = v as string | string[];
  }
  return out;
};

/**
 * Runs an API handler for the signed-in owner: the same function the API route calls, with the
 * owner's workspace as its auth, so the API's rules and its errors are the page's too. `T` is
 * the operation's success body from the generated types (the handlers' own return types are wide).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function callApi<T, H extends Handler<any> = Handler<any>>(
  handler: H | undefined,
  ctx: PageContext,
  parts: { params?: Parameters<H>[0]['params']; body?: Parameters<H>[0]['body']; query?: Parameters<H>[0]['query'] } = {},
): Promise<T> {
  if (!handler) throw new Error('handler missing');
  const auth: AuthContext = { workspaceId: ctx.owner.workspaceId, kind: 'owner', ownerId: ctx.owner.ownerId, scopes: [] };
  const request = Object.create(ctx.request, {
    auth: { value: auth },
    params: { value: parts.params ?? {} },
    body: { value: parts.body },
    query: { value: parts.query ?? {} },
  });
  // Handlers set a status or send an empty 204 through the reply; the page renders its own answer.
  const reply = {
    statusCode: 200,
    code(status: number) {
      this.statusCode = status;
      return this;
    },
    header() {
      return this;
    },
    headers() {
      return this;
    },
    send() {
      return this;
    },
  };
  const result: unknown = await handler(request as never, reply as never);
  return (result === reply ? undefined : result) as T;
}

function errorPage(page: SettingsPage) {
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const status = error instanceof HttpProblem ? error.status : error.statusCode && error.statusCode >= 400 && error.statusCode < 600 ? error.statusCode : 500;
    if (status >= 500) request.log.error({ err: error }, 'page failed');
    const message =
      status === 403
        ? 'This form has expired or was not sent from this site. Go back, reload the page and try again.'
        : status === 429
          ? 'Too many requests. Wait a little and try again.'
          : status === 404
            ? 'There is no such thing in this workspace.'
            : status >= 500
              ? 'Something went wrong on our side. Try again in a moment.'
              : 'The request could not be understood.';
    const body = html`<p role="alert">${message}</p><p><a href="${page.section ?? page.path}">Back</a></p>`;
    // The layout needs the owner; an error page before one is known stays minimal.
    const owner = (request as { settingsOwner?: SignedInOwner }).settingsOwner;
    if (owner)
      return sendSettingsPage(reply, status, {
        title: page.title,
        owner,
        csrf: reply.generateCsrf(csrfCookie(request)),
        section: page.section ?? page.path,
        body,
      });
    return sendFormPage(reply, status, page.title, html`<h1>${page.title}</h1><p role="alert">${message}</p><p><a href="${SIGN_IN_PATH}">Sign in</a></p>`);
  };
}

const csrfCookie = (request: FastifyRequest) => ({
  path: '/',
  httpOnly: true,
  sameSite: 'lax' as const,
  secure: request.server.config.production,
  signed: true,
});

export function registerSettingsPage(app: FastifyInstance, page: SettingsPage) {
  const section = page.section ?? page.path;
  const checkCsrf: preHandlerHookHandler = function (request, reply, done) {
    request.server.csrfProtection.call(this, request, reply, done);
  };

  const notFound = () => new HttpProblem(404, 'not-found', `No such ${page.title.toLowerCase().replace(/s$/, '')} in this workspace.`);

  async function render(ctx: PageContext, status: number, extras: Extras): Promise<FastifyReply> {
    const body = await page.render(ctx, extras);
    return sendSettingsPage(ctx.reply, status, { title: page.title, owner: ctx.owner, csrf: ctx.csrf, section, body });
  }

  /** Owner, CSRF token and checked ids, then `run`; a refusal of the API re-renders with its reason. */
  const serve = (run: (ctx: PageContext) => Promise<Extras | FastifyReply>, posted: boolean) => async (request: FastifyRequest, reply: FastifyReply) => {
    const owner = await currentOwner(request);
    if (!owner) {
      const next = posted ? page.path.replace(/\/:.*$/, '') : request.url;
      return reply.header('cache-control', 'no-store').redirect(`${SIGN_IN_PATH}?next=${encodeURIComponent(next)}`, 303);
    }
    (request as { settingsOwner?: SignedInOwner }).settingsOwner = owner;
    const params = (request.params ?? {}) as Record<string, string>;
    const ctx: PageContext = { request, reply, owner, csrf: reply.generateCsrf(csrfCookie(request)), params };
    try {
      for (const [name, shape] of Object.entries(page.ids ?? {})) if (params[name] !== undefined && !shape.test(params[name])) throw notFound();
      const outcome = await run(ctx);
      return 'statusCode' in outcome ? outcome : render(ctx, 200, outcome);
    } catch (error) {
      // 502: the provider refused (a retried set-up); the page says so rather than failing.
      if (!(error instanceof HttpProblem) || (error.status >= 500 && error.status !== 502)) throw error;
      if (!posted && error.status === 404) {
        const back = html`<p role="alert">${error.problem.detail ?? 'Not found.'}</p><p><a href="${section}">Back</a></p>`;
        return sendSettingsPage(reply, 404, { title: page.title, owner, csrf: ctx.csrf, section, body: back });
      }
      return render(ctx, error.status, { error: problemMessage(error), form: formOf(request.body) });
    }
  };

  app.get(
    page.path,
    { errorHandler: errorPage(page) },
    serve(async () => ({}), false),
  );

  return {
    /** A form action at `page.path` + `suffix`, guarded by origin and CSRF checks. */
    post(suffix: string, run: Action, ids: Record<string, RegExp> = {}) {
      const shapes = { ...page.ids, ...ids };
      app.post(`${page.path}${suffix}`, {
        errorHandler: errorPage(page),
        preHandler: [refuseCrossSitePost, checkCsrf],
        handler: serve(async (ctx) => {
          for (const [name, shape] of Object.entries(shapes)) if (ctx.params[name] !== undefined && !shape.test(ctx.params[name])) throw notFound();
          return run(ctx);
        }, true),
      });
    },
  };
}

/** A 303 to a page (after a change that shows no secret), never cached. */
export const seeOther = (reply: FastifyReply, path: string) => reply.header('cache-control', 'no-store').redirect(path, 303);
