// The simulated phone, `/sandbox/phone`: a person types as a customer of a sandbox number and the
// message reaches the workspace through the provider's path (sendFromSandboxPhone: signed inbound
// webhook, dedupe, contact, events, LOGIN verification), as a real phone's would. Served only
// when the demo is on or outside production.
//
// Which numbers a browser may write to: the shared service number (when it is a sandbox number),
// the demo workspace's sandbox numbers, the signed-in owner's, and outside production every
// sandbox number. Anyone can type any sender number, so a conversation's history is shown to
// the number's owner, or else to a browser that wrote in it, and then only from its own first
// message on (a signed cookie lists its conversations). Plain HTML forms with a CSRF token: no
// script at all. The form is multipart, so the customer can also send a photo or a document
// (kept by the sandbox as the provider keeps inbound media, downloadable through the API).
import multipart from '@fastify/multipart';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import type {} from '@fastify/cookie';
import type {} from '@fastify/csrf-protection';
import { currentOwner } from '#server/auth/owner-session.js';
import { demoWorkspaceId } from '#server/demo.js';
import { DEMO_LOGIN_PATH, SANDBOX_PHONE_PATH, sandboxPhoneServed, sendDemoPage } from '#server/html/demo-layout.js';
import { csrfField, formField, refuseCrossSitePost } from '#server/html/forms.js';
import { html, type Html } from '#server/html/html.js';
import { HttpProblem } from '#server/lib/problems.js';
import { E164, readPhone } from '#server/lib/phone.js';
import type { Database } from '#server/store/schema.js';
import { workspaceCountry } from '../configuration/messaging-settings.js';
import type { SandboxProvider } from '#server/providers/sandbox.js';
import { SERVICE_WORKSPACE_ID } from '../../login/service-phone.js';
import { sendFromSandboxPhone } from './phone.js';
import { offerControls, postedReply, REPLY_PATH } from './reply-forms.js';
import { type Offer, offerOf, replyFromSandboxPhone } from './replies.js';

const SEND_PATH = `${SANDBOX_PHONE_PATH}/send`;
/** `/sandbox/phone/media/<message id>`: a photo this browser sent, shown as a thumbnail in its conversation. */
const MEDIA_PATH = `${SANDBOX_PHONE_PATH}/media`;
const THUMBNAIL_KINDS = new Set(['image', 'sticker']);
/** Types a browser shows as an image and nothing else (no SVG: it can carry script). */
const THUMBNAIL_TYPES = new Set(['image/jpeg', 'image/png', 'image/webp']);
const HISTORY = 30;
const MAX_CONVERSATIONS = 10;
/** The largest file the phone sends; the sandbox keeps it in the database. */
const MAX_FILE_BYTES = 16 * 1024 * 1024;
const ACCEPT = 'image/jpeg,image/png,application/pdf,text/plain,.doc,.docx,.xls,.xlsx,.ppt,.pptx,audio/*,video/mp4,video/3gpp';

declare module 'fastify' {
  interface FastifyRequest {
    /** The file of a sandbox phone post, when one was chosen. */
    sandboxPhoneFile?: { bytes: Buffer; filename: string; declaredType: string };
  }
}

interface SandboxNumber {
  id: string;
  display: string;
  name: string;
  workspaceId: string;
  service: boolean;
  owned: boolean;
}

interface Draft {
  to?: string;
  from: string;
  name: string;
  text: string;
}

// ---- This browser's phone: sender, name and conversations, in a signed cookie ------------------

interface Conversation {
  to: string;
  from: string;
  /** This browser's first message in it (`msg_…`) and its time, ms since the epoch (stored times have whole seconds). */
  first: string;
  since: number;
}

interface PhoneState {
  from: string;
  name: string;
  /** Each conversation this browser wrote in, newest first: since when it may read it. */
  conversations: Conversation[];
}

const stateCookie = (production: boolean) => (production ? '__Secure-sandbox_phone' : 'sandbox_phone');

function readState(request: FastifyRequest): PhoneState {
  const empty: PhoneState = { from: '', name: '', conversations: [] };
  const raw = request.cookies?.[stateCookie(request.server.config.production)];
  if (!raw) return empty;
  const unsigned = request.unsignCookie(raw);
  if (!unsigned.valid || !unsigned.value) return empty;
  try {
    const value = JSON.parse(unsigned.value) as Partial<PhoneState>;
    return {
      from: typeof value.from === 'string' ? value.from : '',
      name: typeof value.name === 'string' ? value.name : '',
      conversations: Array.isArray(value.conversations)
        ? value.conversations
            .filter(
              (c): c is Conversation => typeof c?.to === 'string' && typeof c.from === 'string' && typeof c.first === 'string' && Number.isFinite(c.since),
            )
            .slice(0, MAX_CONVERSATIONS)
        : [],
    };
  } catch {
    return empty;
  }
}

function writeState(request: FastifyRequest, reply: FastifyReply, state: PhoneState): void {
  reply.setCookie(stateCookie(request.server.config.production), JSON.stringify(state), {
    path: SANDBOX_PHONE_PATH,
    httpOnly: true,
    sameSite: 'lax',
    secure: request.server.config.production,
    signed: true,
    maxAge: 7 * 24 * 60 * 60,
  });
}

// ---- Numbers and messages ------------------------------------------------------------------------

/** The sandbox numbers this request may write to, the service number first. */
async function visibleNumbers(request: FastifyRequest): Promise<SandboxNumber[]> {
  const app = request.server;
  const { db } = app.platform.store;
  const owner = await currentOwner(request);
  const demoWorkspace = await demoWorkspaceId(app.platform);
  // The service number as the Login API chose it (LOGIN_SERVICE_PHONE_NUMBER_ID, else the first
  // number of the service workspace), if it exists yet; a GET creates nothing.
  const configured = app.config.loginServicePhoneNumberId;
  const service = await db
    .selectFrom('phone_numbers')
    .select('id')
    .where((eb) => (configured ? eb('id', '=', configured) : eb('workspace_id', '=', SERVICE_WORKSPACE_ID)))
    .orderBy('created_at')
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
  const workspaces = [demoWorkspace, owner?.workspaceId].filter((id): id is string => Boolean(id));
  let query = db
    .selectFrom('phone_numbers')
    .innerJoin('business_accounts', 'business_accounts.id', 'phone_numbers.business_account_id')
    .select(['phone_numbers.id', 'phone_numbers.display_phone_number', 'phone_numbers.verified_name', 'phone_numbers.workspace_id', 'phone_numbers.created_at'])
    .where('business_accounts.kind', '=', 'sandbox');
  if (app.config.production) {
    query = query.where((eb) =>
      eb.or([eb('phone_numbers.id', '=', service?.id ?? ''), ...(workspaces.length ? [eb('phone_numbers.workspace_id', 'in', workspaces)] : [])]),
    );
  }
  const rows = await query.orderBy('phone_numbers.created_at').orderBy('phone_numbers.id').limit(200).execute();
  return rows
    .map((row) => ({
      id: row.id,
      display: row.display_phone_number,
      name: row.verified_name,
      workspaceId: row.workspace_id,
      service: row.id === service?.id,
      owned: row.workspace_id === owner?.workspaceId,
    }))
    .sort((a, b) => Number(b.service) - Number(a.service));
}

/** A number named by its id (`pn_…`) or by its phone number in any format. */
function findNumber(numbers: SandboxNumber[], to: string | undefined): SandboxNumber | undefined {
  if (!to) return undefined;
  const byId = numbers.find((n) => n.id === to);
  if (byId) return byId;
  const digits = to.replace(/\D/g, '');
  return digits ? numbers.find((n) => n.display.replace(/\D/g, '') === digits) : undefined;
}

/** `+` and digits, from what a person types (`+1 555-010 0123`, or a `+` lost to URL decoding as a space). */
function normalizePhone(value: string): string {
  const digits = value.replace(/\D/g, '');
  return digits ? `+${digits}` : '';
}

/**
 * The customer's number typed on the phone: with `+` as written (any possible number, as the
 * sandbox's test numbers are); without, a national number of the business's country (Messaging
 * settings, else its first number's), taken only when valid: `(617) 555-9008` typed to a US
 * business is +16175559008, never +6175559008. '' when it is neither.
 */
async function senderNumber(db: Kysely<Database>, value: string, workspaceId: string | undefined): Promise<string> {
  if (value.trim().startsWith('+') || !workspaceId) return normalizePhone(value);
  const read = readPhone(value, await workspaceCountry(db, workspaceId));
  return read.ok ? read.e164 : '';
}

interface ChatLine {
  id: string;
  /** What a received interactive message lets the customer tap or fill in. */
  offer: Offer | null;
  inbound: boolean;
  text: string;
  at: Date;
  status: string;
  /** An inbound message the business marked read (blue ticks on the phone). */
  read?: boolean;
  /** A photo the phone sent: its thumbnail's address (MEDIA_PATH). */
  image?: string;
}

/** The conversation, or the part of it from `joined`'s first message on (later in time, or that message itself). */
async function conversation(request: FastifyRequest, number: SandboxNumber, from: string, joined: Conversation | null): Promise<ChatLine[]> {
  let query = request.server.platform.store.db
    .selectFrom('messages')
    .innerJoin('contacts', 'contacts.id', 'messages.contact_id')
    .select(['messages.id', 'messages.direction', 'messages.type', 'messages.content', 'messages.status', 'messages.created_at'])
    .where('messages.phone_number_id', '=', number.id)
    .where('contacts.workspace_id', '=', number.workspaceId)
    .where('contacts.phone', '=', from);
  if (joined) query = query.where((eb) => eb.or([eb('messages.created_at', '>', new Date(joined.since)), eb('messages.id', '=', joined.first)]));
  const rows = await query.orderBy('messages.created_at', 'desc').orderBy('messages.id', 'desc').limit(HISTORY).execute();
  const db = request.server.platform.store.db;
  const lines: ChatLine[] = [];
  for (const row of rows.reverse()) {
    const inbound = row.direction === 'inbound';
    const offer = inbound ? null : await offerOf(db, number.workspaceId, row.content);
    const image = inbound && THUMBNAIL_KINDS.has(row.type) ? `${MEDIA_PATH}/${row.id}` : undefined;
    lines.push({ id: row.id, offer, inbound, text: describe(row.type, row.content), at: new Date(row.created_at), status: row.status, image });
  }
  // The provider's side of the chat: which of the customer's messages the business read
  // (markChatRead, the typing indicator), and whether it is typing a reply now.
  const pn = await db.selectFrom('phone_numbers').select('provider_phone_number_id').where('id', '=', number.id).executeTakeFirst();
  const sandbox = request.server.platform.provider('sandbox') as SandboxProvider;
  const lastOut = lines.filter((l) => !l.inbound).at(-1)?.at ?? null;
  const phone = pn ? sandbox.phoneState(pn.provider_phone_number_id, from, lastOut) : { readThrough: null, typing: false };
  for (const line of lines) if (line.inbound && phone.readThrough && line.at <= phone.readThrough) line.read = true;
  if (phone.typing) lines.push({ id: 'typing', offer: null, inbound: false, text: '…', at: request.server.platform.now(), status: 'typing' });
  return lines;
}

/**
 * Authentication codes (Login's `mode: "code"`) the number sent to `from` in the last 10 minutes,
 * newest first: the simulated phone shows them to whoever types that number, as it lets anyone
 * write LOGIN as any number. Other messages stay behind the conversation rule above.
 */
async function codesSent(request: FastifyRequest, number: SandboxNumber, from: string): Promise<ChatLine[]> {
  const since = new Date(request.server.platform.now().getTime() - 10 * 60_000);
  const rows = await request.server.platform.store.db
    .selectFrom('messages')
    .innerJoin('contacts', 'contacts.id', 'messages.contact_id')
    .select(['messages.id', 'messages.type', 'messages.content', 'messages.status', 'messages.created_at'])
    .where('messages.phone_number_id', '=', number.id)
    .where('contacts.workspace_id', '=', number.workspaceId)
    .where('contacts.phone', '=', from)
    .where('messages.direction', '=', 'outbound')
    .where('messages.type', '=', 'template')
    .where('messages.created_at', '>', since)
    .orderBy('messages.created_at', 'desc')
    .limit(5)
    .execute();
  return rows
    .filter((row) => {
      const value = (typeof row.content === 'string' ? safeJson(row.content) : row.content) as { template?: { category?: unknown } } | null;
      return value?.template?.category === 'AUTHENTICATION';
    })
    .map((row) => ({ id: row.id, offer: null, inbound: false, text: describe(row.type, row.content), at: new Date(row.created_at), status: row.status }));
}

function describe(type: string, content: unknown): string {
  const value = (typeof content === 'string' ? safeJson(content) : content) as Record<string, any> | null;
  if (value?.interactive && typeof value.text === 'string') return `${value.text}${interactiveChoices(value.interactive)}`;
  if (value?.reaction) return value.reaction.emoji ? `[reaction ${value.reaction.emoji}]` : '[reaction removed]';
  if (Array.isArray(value?.contacts)) return `[contact card] ${value.contacts.map((c: any) => c?.name?.formatted_name ?? '?').join(', ')}`;
  if (value && typeof value.text === 'string') return value.text;
  if (value && typeof value.text?.body === 'string') return value.text.body;
  if (value && typeof value.caption === 'string') return `[${type}] ${value.caption}`;
  if (value && typeof value.media?.filename === 'string') return `[${type}] ${value.media.filename}`;
  if (value?.template && typeof value.template.name === 'string') return `[template ${value.template.name}]`;
  return `[${type}]`;
}

/** What the customer can tap under an interactive message: buttons, rows, a link, a Flow or "Send location". */
function interactiveChoices(i: Record<string, any>): string {
  const a = i.action ?? {};
  if (i.type === 'button') return ` [${(a.buttons ?? []).map((b: any) => b?.reply?.title).join(' | ')}]`;
  if (i.type === 'list') return ` [${a.button}: ${(a.sections ?? []).flatMap((s: any) => (s.rows ?? []).map((r: any) => r.title)).join(' | ')}]`;
  if (i.type === 'cta_url') return ` [${a.parameters?.display_text} → ${a.parameters?.url}]`;
  if (i.type === 'flow') return ` [${a.parameters?.flow_cta}]`;
  if (i.type === 'location_request_message') return ' [Send location]';
  return '';
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

// ---- Views --------------------------------------------------------------------------------------

function label(n: SandboxNumber): string {
  return `${n.display} — ${n.service ? 'shared service number (Login)' : n.name}`;
}

function phoneView(input: {
  numbers: SandboxNumber[];
  selected?: SandboxNumber;
  draft: Draft;
  csrf: string;
  chat: ChatLine[] | null;
  codes: ChatLine[];
  notice?: string;
  error?: string;
  demoLink: boolean;
}): Html {
  const { numbers, selected, draft, csrf, chat, codes, notice, error, demoLink } = input;
  return html`<main id="sandbox-phone">
<p class="brand">Sandbox phone <small>a simulated customer’s chat app</small></p>
<div class="card">
<h1>Send a message</h1>
<p class="muted">Messages go to the workspace through the provider’s inbound webhook path, as a real phone’s would.</p>
${error ? html`<p role="alert">${error}</p>` : ''}
${notice ? html`<p class="ok" role="status">${notice}</p>` : ''}
${
  numbers.length
    ? html`<form method="post" action="${SEND_PATH}" enctype="multipart/form-data">
${csrfField(csrf)}
<label for="to">To</label>
<select id="to" name="to" required>
${numbers.map((n) => html`<option value="${n.id}"${n.id === selected?.id ? html` selected` : ''}>${label(n)}</option>`)}
</select>
<label for="from">Your number</label>
<input id="from" name="from" type="tel" value="${draft.from}" placeholder="+15550100123" autocomplete="off" maxlength="20" required>
<label for="name">Your name</label>
<input id="name" name="name" type="text" value="${draft.name}" placeholder="Ana Souza" autocomplete="off" maxlength="100">
<label for="text">Message <small>(the caption, with a file)</small></label>
<textarea id="text" name="text" maxlength="4096">${draft.text}</textarea>
<label for="file">Photo or document <small>(optional, up to ${MAX_FILE_BYTES / 1024 / 1024} MB)</small></label>
<input id="file" name="file" type="file" accept="${ACCEPT}">
<button type="submit">Send</button>
</form>`
    : html`<p role="alert">No sandbox number is available to this browser.</p>`
}
</div>
${
  selected && draft.from
    ? html`<div class="card">
<h2>Conversation with ${selected.display}</h2>
${
  chat === null
    ? html`<p class="muted">Send a message from ${draft.from} to see this conversation here.</p>`
    : chat.length
      ? html`<ul class="chat" id="chat">${chat.map(
          (line) =>
            html`<li class="${line.inbound ? 'in' : 'out'}">${line.image ? html`<img class="thumb" src="${line.image}" alt="Photo you sent" loading="lazy">` : ''}${line.text}<small>${line.inbound ? 'you' : selected.name} · ${line.at.toISOString().slice(11, 19)} UTC${line.inbound ? (line.read ? ' · read ✓✓' : '') : ` · ${line.status}`}</small>${line.offer ? offerControls(line.offer, { messageId: line.id, to: selected.id, from: draft.from, csrf }) : ''}</li>`,
        )}</ul>`
      : html`<p class="muted">No messages yet.</p>`
}
<p><a href="${`${SANDBOX_PHONE_PATH}?${new URLSearchParams({ to: selected.id })}`}">Refresh</a></p>
</div>`
    : ''
}
${
  selected && codes.length
    ? html`<div class="card">
<h2>Codes sent to ${draft.from}</h2>
<ul class="chat" id="codes">${codes.map((line) => html`<li class="out">${line.text}<small>${selected.name} · ${line.at.toISOString().slice(11, 19)} UTC</small></li>`)}</ul>
<p><a href="${`${SANDBOX_PHONE_PATH}?${new URLSearchParams({ to: selected.id, from: draft.from })}`}">Refresh</a></p>
</div>`
    : ''
}
<div class="card">
<h2>Sandbox numbers</h2>
<ul class="numbers">
${numbers.map((n) => html`<li><a href="${`${SANDBOX_PHONE_PATH}?${new URLSearchParams({ to: n.id })}`}">${n.display}</a> <small>${n.service ? 'shared service number (Login)' : n.name}${n.owned ? ' · your workspace' : ''}</small></li>`)}
</ul>
${demoLink ? html`<p class="muted">Signing in on <a href="${DEMO_LOGIN_PATH}">the Login demo</a>? Its “Open the sandbox phone” button fills in the number and the LOGIN message.</p>` : ''}
</div>
</main>`;
}

// ---- Routes -------------------------------------------------------------------------------------

export default async function sandboxPhonePages(app: FastifyInstance): Promise<void> {
  const { demo, production } = app.config;
  if (!sandboxPhoneServed(app.config)) return; // 404 like any unknown path

  const csrfCookie = { path: '/', httpOnly: true, sameSite: 'lax' as const, secure: production, signed: true };

  // Multipart for this page only: text fields as the form parser gives them, the file on the request.
  await app.register(multipart, {
    attachFieldsToBody: 'keyValues',
    limits: { fileSize: MAX_FILE_BYTES, files: 1, fields: 10, fieldSize: 8192, parts: 11 },
    throwFileSizeLimit: true,
    async onFile(part) {
      const bytes = await part.toBuffer();
      // An empty file input still sends a part: no name, no bytes.
      if (bytes.length || part.filename) this.sandboxPhoneFile = { bytes, filename: part.filename, declaredType: part.mimetype };
    },
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const status = error instanceof HttpProblem ? error.status : error.statusCode && error.statusCode >= 400 && error.statusCode < 600 ? error.statusCode : 500;
    if (status >= 500) request.log.error({ err: error }, 'sandbox phone failed');
    if (error instanceof HttpProblem) reply.headers(error.headers);
    const message =
      status === 403
        ? 'This form has expired or was not sent from this site. Go back, reload the page and try again.'
        : status === 413
          ? `The file is too large; the sandbox phone sends files up to ${MAX_FILE_BYTES / 1024 / 1024} MB.`
          : status === 429
            ? 'Too many messages. Wait a little and try again.'
            : status >= 500
              ? 'Something went wrong on our side. Try again in a moment.'
              : 'The request could not be understood.';
    return sendDemoPage(reply, status, {
      title: 'Sandbox phone',
      body: html`<main><div class="card"><h1>Sandbox phone</h1><p role="alert">${message}</p><p><a href="${SANDBOX_PHONE_PATH}">Back</a></p></div></main>`,
    });
  });

  /** Renders the phone; the conversation only if this browser wrote in it or owns the number. */
  async function render(request: FastifyRequest, reply: FastifyReply, status: number, draft: Draft, extra: { notice?: string; error?: string } = {}) {
    const state = readState(request);
    const numbers = await visibleNumbers(request);
    const selected = findNumber(numbers, draft.to) ?? numbers[0];
    const from = normalizePhone(draft.from);
    const joined = selected ? state.conversations.find((c) => c.to === selected.id && c.from === from) : undefined;
    const chat =
      selected && E164.test(from) && (selected.owned || joined) ? await conversation(request, selected, from, selected.owned || !joined ? null : joined) : null;
    const codes = selected && E164.test(from) ? await codesSent(request, selected, from) : [];
    const csrf = reply.generateCsrf(csrfCookie);
    return sendDemoPage(reply, status, { title: 'Sandbox phone', body: phoneView({ numbers, selected, draft, csrf, chat, codes, demoLink: demo, ...extra }) });
  }

  // A photo of a conversation this browser may read (the rule of `render`), for its thumbnail.
  app.get<{ Params: { id: string } }>(`${MEDIA_PATH}/:id`, async (request, reply) => {
    const { id } = request.params;
    if (!/^msg_[0-9A-Za-z]{8,48}$/.test(id)) return reply.callNotFound();
    const db = app.platform.store.db;
    const row = await db
      .selectFrom('messages')
      .innerJoin('contacts', 'contacts.id', 'messages.contact_id')
      .select([
        'messages.id',
        'messages.phone_number_id',
        'messages.direction',
        'messages.type',
        'messages.content',
        'messages.created_at',
        'contacts.phone',
        'contacts.workspace_id',
      ])
      .where('messages.id', '=', id)
      .executeTakeFirst();
    if (row?.direction !== 'inbound' || !THUMBNAIL_KINDS.has(row.type)) return reply.callNotFound();
    const number = (await visibleNumbers(request)).find((n) => n.id === row.phone_number_id && n.workspaceId === row.workspace_id);
    const joined = number && readState(request).conversations.find((c) => c.to === number.id && c.from === row.phone);
    const readable = number && (number.owned || (joined && (new Date(row.created_at).getTime() > joined.since || row.id === joined.first)));
    const content = (typeof row.content === 'string' ? safeJson(row.content) : row.content) as { media?: { provider_media_id?: unknown } } | null;
    const mediaId = content?.media?.provider_media_id;
    if (!readable || typeof mediaId !== 'string') return reply.callNotFound();
    const file = await db
      .selectFrom('sandbox_media')
      .select(['mime_type', 'bytes'])
      .where('provider_media_id', '=', mediaId)
      .where('phone_number_id', '=', number.id)
      .executeTakeFirst();
    if (!file || !THUMBNAIL_TYPES.has(file.mime_type)) return reply.callNotFound();
    return reply
      .headers({
        'content-type': file.mime_type,
        'content-disposition': 'inline',
        'cache-control': 'private, no-store',
        'x-content-type-options': 'nosniff',
        'content-security-policy': "default-src 'none'; sandbox",
      })
      .send(file.bytes);
  });

  app.get(SANDBOX_PHONE_PATH, async (request, reply) => {
    const query = request.query as Record<string, unknown>;
    const state = readState(request);
    const text = typeof query.text === 'string' ? query.text.slice(0, 4096) : '';
    const to = typeof query.to === 'string' ? query.to.slice(0, 64) : undefined;
    // `from`: the number a Login code was sent to (the demo's "receive a code" link fills it in).
    const from = typeof query.from === 'string' && query.from ? normalizePhone(query.from.slice(0, 32)) : state.from;
    const sent = query.sent === '1';
    return render(request, reply, 200, { to, from, name: state.name, text }, sent ? { notice: 'Sent.' } : {});
  });

  // A tap on a reply button or list row, or a submitted form, of a message in a conversation this browser may read.
  app.post(REPLY_PATH, { preHandler: [refuseCrossSitePost, app.csrfProtection] }, async (request, reply) => {
    const body = request.body;
    const state = readState(request);
    const draft: Draft = { to: formField(body, 'to').slice(0, 64), from: formField(body, 'from').slice(0, 32), name: state.name, text: '' };
    const number = findNumber(await visibleNumbers(request), draft.to);
    const from = normalizePhone(draft.from);
    const wanted = postedReply(body);
    const allowed = number && (number.owned || state.conversations.some((c) => c.to === number.id && c.from === from));
    if (!number || !E164.test(from) || !wanted || !allowed) return render(request, reply, 400, draft, { error: 'That message cannot be answered from here.' });
    try {
      await replyFromSandboxPhone(app, { phoneNumberId: number.id, workspaceId: number.workspaceId, from, name: state.name || undefined }, wanted);
    } catch (error) {
      if (!(error instanceof HttpProblem) || error.status >= 500) throw error;
      return render(request, reply, error.status, draft, { error: error.message });
    }
    return reply.header('cache-control', 'no-store').redirect(`${SANDBOX_PHONE_PATH}?${new URLSearchParams({ to: number.id, sent: '1' })}`, 303);
  });

  app.post(SEND_PATH, { preHandler: [refuseCrossSitePost, app.csrfProtection] }, async (request, reply) => {
    const body = request.body;
    const draft: Draft = {
      to: formField(body, 'to').slice(0, 64),
      from: formField(body, 'from').slice(0, 32),
      name: formField(body, 'name').slice(0, 100).trim(),
      text: formField(body, 'text').slice(0, 4096),
    };
    const numbers = await visibleNumbers(request);
    const number = findNumber(numbers, draft.to);
    const from = await senderNumber(app.platform.store.db, draft.from, number?.workspaceId);
    const problem = !number
      ? 'Choose one of the sandbox numbers.'
      : !E164.test(from)
        ? 'Your number must be a phone number in international format, such as +15550100123, or a valid national number of the business’s country.'
        : !draft.text.trim() && !request.sandboxPhoneFile
          ? 'Write a message or choose a file.'
          : undefined;
    if (problem || !number) return render(request, reply, 400, draft, { error: problem });
    let messageId: string;
    try {
      ({ messageId } = await sendFromSandboxPhone(app, {
        phoneNumberId: number.id,
        from,
        name: draft.name || undefined,
        text: draft.text,
        ...(request.sandboxPhoneFile ? { file: request.sandboxPhoneFile } : {}),
      }));
    } catch (error) {
      if (!(error instanceof HttpProblem) || error.status >= 500) throw error;
      return render(request, reply, error.status, draft, { error: error.message });
    }
    const state = readState(request);
    const same = (c: Conversation) => c.to === number.id && c.from === from;
    // From this message on, by the stored time (whichever clock wrote it).
    const sent = await app.platform.store.db.selectFrom('messages').select('created_at').where('id', '=', messageId).executeTakeFirstOrThrow();
    const joined = state.conversations.find(same) ?? { to: number.id, from, first: messageId, since: new Date(sent.created_at).getTime() };
    writeState(request, reply, { from, name: draft.name, conversations: [joined, ...state.conversations.filter((c) => !same(c))].slice(0, MAX_CONVERSATIONS) });
    return reply.header('cache-control', 'no-store').redirect(`${SANDBOX_PHONE_PATH}?${new URLSearchParams({ to: number.id, sent: '1' })}`, 303);
  });
}
