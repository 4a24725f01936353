// The 404 of the product for a person: an unknown path opened in a browser gets the page of the
// sign-in and home pages, with the way back, where an API client (anything that does not prefer
// HTML) keeps the problem+json every API error is. Both answers say they vary by Accept.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { sendFormPage } from './form-layout.js';
import { html } from './html.js';

/** The highest q an Accept header gives any of `types` (0 when none is listed). */
function quality(ranges: { type: string; q: number }[], types: string[]): number {
  return Math.max(0, ...ranges.filter((range) => types.includes(range.type)).map((range) => range.q));
}

/**
 * Whether the client prefers HTML to JSON: a browser's navigation (`text/html,…,*\/*;q=0.8`) does,
 * `application/json`, `*\/*` or no Accept at all does not. HTML must be named, and rank at least
 * as high as any JSON type named.
 */
export function prefersHtml(accept: string | undefined): boolean {
  if (!accept) return false;
  const ranges = accept.split(',').map((part) => {
    const [type = '', ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    const q = params.find((p) => p.startsWith('q='));
    const value = q ? Number(q.slice(2)) : 1;
    return { type, q: Number.isFinite(value) ? value : 0 };
  });
  const htmlQ = quality(ranges, ['text/html', 'application/xhtml+xml']);
  const jsonQ = quality(ranges, ['application/json', 'application/problem+json']);
  return htmlQ > 0 && htmlQ >= jsonQ;
}

export function sendNotFoundPage(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const path = request.url.split('?')[0]!;
  return sendFormPage(
    reply.header('vary', 'Accept'),
    404,
    'Page not found',
    html`<h1>Page not found</h1>
<p class="lead">Nothing is served at <code>${path}</code> on this server.</p>
<ul class="links">
<li><a href="/">Home</a><span>Everything this server serves.</span></li>
<li><a href="/docs">API documentation</a><span>The references and the getting-started guides.</span></li>
<li><a href="/account">Settings</a><span>Your workspace's keys, clients, webhooks, Login apps and numbers.</span></li>
</ul>`,
  );
}
