// The headers of every HTML page, and the pieces of their Content-Security-Policy. Each page sets
// its own policy, which replaces the API's default one (server/plugins/security-headers.ts) whole.
import { createHash } from 'node:crypto';
import { DOCUMENT_HEADERS } from '../plugins/security-headers.js';
import { html, trustedHtml, type Html } from './html.js';

/**
 * Headers of every HTML page: its CSP, never framed, never cached, no Referer leaves it, and
 * Helmet's headers for rendered documents (opener policy and the rest), which API answers do not carry.
 */
export function pageHeaders(csp: string): Record<string, string> {
  return {
    ...DOCUMENT_HEADERS,
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': csp,
    'x-frame-options': 'DENY',
    'cache-control': 'no-store',
    'referrer-policy': 'no-referrer',
  };
}

/** A CSP source allowing exactly this stylesheet (the page must carry it byte-exact). */
export const styleHash = (css: string) => `'sha256-${createHash('sha256').update(css).digest('base64')}'`;

/** A constant stylesheet as a <style> element, unescaped so that its bytes match `styleHash(css)`. */
export const styleElement = (css: string): Html => html`<style>${trustedHtml(css)}</style>`;

/**
 * The policy of our form pages: no script at all, one stylesheet by its hash (not 'unsafe-inline'),
 * images (the icon) and forms to this origin only.
 */
export function formPageCsp(css: string): string {
  return ["default-src 'none'", `style-src ${styleHash(css)}`, "img-src 'self'", "form-action 'self'", "frame-ancestors 'none'", "base-uri 'none'"].join('; ');
}
