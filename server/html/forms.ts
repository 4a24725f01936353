// What every page with a form needs: the hidden fields a form carries (the CSRF token of
// @fastify/csrf-protection, or values passed through a post), the posted fields read back, and
// the check that a post was sent from this site.
import type { FastifyRequest } from 'fastify';
import { HttpProblem } from '../lib/problems.js';
import { html, type Html } from './html.js';

/** The CSRF token of @fastify/csrf-protection, as the hidden `_csrf` field the plugin reads. */
export const csrfField = (token: string): Html => html`<input type="hidden" name="_csrf" value="${token}">`;

/** Hidden inputs carrying values through a form post; undefined values are left out. */
export function hiddenFields(fields: Record<string, string | undefined>): Html {
  return html`${Object.entries(fields).map(([name, value]) => (value === undefined ? '' : html`<input type="hidden" name="${name}" value="${value}">`))}`;
}

/** A text field of a posted form ('' if absent or repeated). */
export function formField(body: unknown, name: string): string {
  const value = body && typeof body === 'object' ? (body as Record<string, unknown>)[name] : undefined;
  return typeof value === 'string' ? value : '';
}

/** A repeated field (checkboxes): every string value. */
export function formFields(body: unknown, name: string): string[] {
  const value = body && typeof body === 'object' ? (body as Record<string, unknown>)[name] : undefined;
  return (Array.isArray(value) ? value : [value]).filter((v): v is string => typeof v === 'string');
}

/** Whether a form post comes from this site: Sec-Fetch-Site and Origin, when the browser sends them. */
export function sameOriginPost(request: FastifyRequest): boolean {
  // Fetch metadata decides where the browser sends it: with `Referrer-Policy: no-referrer`
  // Chromium sends `Origin: null` even on same-origin posts, so Origin is only the fallback.
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined) return site === 'same-origin';
  const origin = request.headers.origin;
  if (origin === undefined) return true; // older browsers: the CSRF token still decides
  const own = [new URL(request.server.config.publicUrl).origin, `${request.protocol}://${request.host}`];
  return own.includes(origin);
}

/** A preHandler refusing (403, before the CSRF check and the handler) a form posted from another site. */
export async function refuseCrossSitePost(request: FastifyRequest): Promise<void> {
  if (!sameOriginPost(request)) throw new HttpProblem(403, 'forbidden', 'This form was not sent from this site.');
}
