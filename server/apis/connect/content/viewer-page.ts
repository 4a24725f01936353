// The public document viewer's HTML (`/l/<slug>`) and its error pages. No inline script or style:
// the page loads /l/assets/viewer.css and the module /l/assets/viewer.js (./assets/, served by
// ./setup.ts), which reads what it needs from data- attributes (escaped like every value here) and
// renders PDFs with pdf.js.
// The page may be framed by this origin only; no Referer leaves it (the URL is the secret).
import type { FastifyReply } from 'fastify';
import { html, htmlDocument, type Html } from '#server/html/html.js';
import { pageHeaders } from '#server/html/page-headers.js';

export const VIEWER_PREFIX = '/l';
export const VIEWER_ASSETS = `${VIEWER_PREFIX}/assets`;

/** Whether a request URL (path and query, as received) is under the viewer's prefix `/l`. */
export function isViewerUrl(url: string): boolean {
  return url.startsWith(VIEWER_PREFIX) && (url.length === VIEWER_PREFIX.length || '/?#'.includes(url[VIEWER_PREFIX.length]!));
}

const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "worker-src 'self'",
  "connect-src 'self'",
  "img-src 'self' blob: data:",
  "style-src 'self'",
  "font-src 'self' data:",
  "frame-ancestors 'self'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

export function viewerHeaders(): Record<string, string> {
  // nosniff again: the error page is also written before any hook ran (a malformed URL).
  return { ...pageHeaders(CSP), 'x-frame-options': 'SAMEORIGIN', 'x-content-type-options': 'nosniff' };
}

export interface ViewerPage {
  title: string;
  filename: string;
  /** `pdf` rendered by pdf.js, `image` as an <img>, `download` offered for download only. */
  kind: 'pdf' | 'image' | 'download';
  fileUrl: string;
  downloadUrl: string | null;
  pageCount: number | null;
  /** Absent for link-preview fetchers, which open no session. */
  session?: { beaconUrl: string; token: string };
}

function layout(title: string, body: Html, script: boolean) {
  return htmlDocument(
    title,
    html`
<meta name="referrer" content="no-referrer">
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${VIEWER_ASSETS}/viewer.css">
${script ? html`<script type="module" src="${VIEWER_ASSETS}/viewer.js"></script>` : ''}
`,
    body,
  );
}

export function sendViewer(reply: FastifyReply, page: ViewerPage): FastifyReply {
  const download = page.downloadUrl ? html`<a class="button" href="${page.downloadUrl}" download>Download</a>` : '';
  const content =
    page.kind === 'pdf'
      ? html`<div class="pager" data-pager hidden><button type="button" data-prev aria-label="Previous page">‹</button>
<span data-status aria-live="polite"></span><button type="button" data-next aria-label="Next page">›</button></div>
<div class="stage"><canvas data-canvas></canvas><p class="muted" data-loading>Loading…</p>
<p role="alert" data-error hidden>This document could not be displayed.</p></div>`
      : page.kind === 'image'
        ? html`<div class="stage"><img src="${page.fileUrl}" alt="${page.title}"></div>`
        : html`<div class="stage"><p>This document cannot be shown in the browser.</p>
${page.downloadUrl ? html`<p>Download it to read it.</p>` : html`<p class="muted">The sender has not allowed downloads.</p>`}</div>`;
  return reply
    .code(200)
    .headers(viewerHeaders())
    .send(
      layout(
        page.title,
        html`<main id="viewer" data-kind="${page.kind}" data-file="${page.fileUrl}" data-pages="${page.pageCount ?? ''}"
 data-beacon="${page.session?.beaconUrl ?? ''}" data-token="${page.session?.token ?? ''}">
<header><h1>${page.title}</h1><span class="muted">${page.filename}</span>${download}</header>
${content}
</main>`,
        true,
      ),
    );
}

const ERROR_TEXTS: Record<number, [title: string, text: string]> = {
  403: ['Download not allowed', 'The sender has not allowed downloads of this document.'],
  404: ['Link not found', 'There is no document at this address. Check the link you were sent.'],
  405: ['Not available', 'This address cannot be used this way. Open the link you were sent in a browser.'],
  410: ['Link no longer available', 'This link has expired or was withdrawn by its sender. Ask them for a new one.'],
  429: ['Too many requests', 'Too many requests from your network. Wait a minute and try again.'],
};

/**
 * A viewer error page, for every refusal under /l/ but the beacons' (400 a malformed or over-long
 * address, 403 downloads off, 404 unknown link or path, 405, 410 revoked or expired, 429, 5xx):
 * no script, no internals.
 */
export function sendViewerError(reply: FastifyReply, status: number, headers: Record<string, string> = {}): FastifyReply {
  const [title, text] =
    ERROR_TEXTS[status] ??
    (status >= 500
      ? ['Something went wrong', 'The document could not be shown right now. Try again in a moment.']
      : ['Bad request', 'This address could not be understood.']);
  return reply
    .code(status)
    .headers({ ...viewerHeaders(), ...headers })
    .send(layout(title, html`<main class="message"><h1>${title}</h1><p>${text}</p></main>`, false));
}

/** What the reader of a phone-verified link is shown until the number is verified. */
export interface VerifyPage {
  /** The LOGIN message's deep link, its QR code (SVG) and the number and message it carries; absent for link previews. */
  login?: { waLink: string; qrCodeSvg: string; number: string; message: string; sandboxPhoneUrl: string | null };
}

/**
 * The verification step of a link with `require_phone_verification`: the QR code and chat link
 * of a LOGIN message, and in development the sandbox phone. No script: the page reloads itself
 * every few seconds (a meta refresh) until the message has arrived. The document's title is not
 * shown before the number is verified.
 */
export function sendVerifyPage(reply: FastifyReply, page: VerifyPage): FastifyReply {
  const login = page.login;
  const qr = login ? `data:image/svg+xml;base64,${Buffer.from(login.qrCodeSvg).toString('base64')}` : '';
  return reply
    .code(200)
    .headers({ ...viewerHeaders(), 'cache-control': 'no-store' })
    .send(
      htmlDocument(
        'Verify your phone',
        html`
<meta name="referrer" content="no-referrer">
${login ? html`<meta http-equiv="refresh" content="3">` : ''}
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${VIEWER_ASSETS}/viewer.css">
`,
        html`<main class="message" id="verify-phone">
<h1>Verify your phone to open this document</h1>
<p>This document was sent to a phone number. Prove it is yours by sending a chat message from it.</p>
${
  login
    ? html`<p><img id="verify-qr" src="${qr}" alt="QR code of the chat link" width="220" height="220"></p>
<p>Scan the code, or open the link, and send <code id="verify-message">${login.message}</code> to <strong id="verify-number">${login.number}</strong>.</p>
<p><a class="button" id="verify-link" href="${login.waLink}" rel="noopener noreferrer">Open the chat app</a></p>
${login.sandboxPhoneUrl ? html`<p class="muted">Development server: this is a sandbox number. <a id="verify-sandbox" href="${login.sandboxPhoneUrl}" target="_blank" rel="noopener">Send it from the sandbox phone</a>.</p>` : ''}
<p class="muted">This page opens the document by itself once your message has arrived.</p>`
    : ''
}
</main>`,
      ),
    );
}

/** A verified number that is not the link's recipient's: a clear refusal, and a way to try another number. */
export function sendPhoneRefused(reply: FastifyReply, verified: string, retryUrl: string): FastifyReply {
  return reply
    .code(403)
    .headers({ ...viewerHeaders(), 'cache-control': 'no-store' })
    .send(
      layout(
        'Not your document',
        html`<main class="message" id="phone-refused"><h1>This document was sent to another number</h1>
<p>You verified <strong>${verified}</strong>, but this link opens only for the phone number it was sent to.</p>
<p><a class="button" id="verify-retry" href="${retryUrl}">Verify another number</a></p></main>`,
        false,
      ),
    );
}
