// The plain page of a short form: the sign-in page, and the error page of a settings page that
// knows no owner yet. One small stylesheet allowed by its hash; no script.
import type { FastifyReply } from 'fastify';
import { html, htmlDocument, type Html } from './html.js';
import { formPageCsp, pageHeaders, styleElement } from './page-headers.js';

const CSS =
  'body{font:16px/1.5 system-ui,sans-serif;max-width:24rem;margin:4rem auto;padding:0 1rem}label,input,button{display:block;width:100%;margin:.25rem 0 1rem}[role=alert]{color:#a00}';
const CSP = formPageCsp(CSS);

export function sendFormPage(reply: FastifyReply, status: number, title: string, body: Html): FastifyReply {
  return reply
    .code(status)
    .headers(pageHeaders(CSP))
    .send(htmlDocument(title, styleElement(CSS), html`<main>${body}</main>`));
}
