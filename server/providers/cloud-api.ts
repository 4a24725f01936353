// The Cloud API adapter: Graph API calls over HTTPS with the business account's bearer token.
// The base URL is configuration (a fixed, trusted host), so a plain HTTP client is right here;
// the SSRF-safe client is for user-given URLs. Retries are deliberately narrow: a message send
// that timed out or hit a 5xx may already be on its way to the customer, so it is never re-sent.
import { createHmac } from 'node:crypto';
import { request } from 'undici';
import {
  ProviderError,
  type BusinessProfile,
  type ChatProvider,
  type FlowCreateInput,
  type MarketingOnboardingStatus,
  type MediaDownload,
  type MediaFile,
  mediaTooLarge,
  type OutboundMessage,
  type ProviderAccount,
  type ProviderCatalog,
  type ProviderNumber,
  type ProviderPhoneNumber,
  type ProviderProduct,
  type SendOptions,
  type SendResult,
  type TemplateCategory,
  type TemplateCreateInput,
  type TemplateCreated,
  type TemplateRef,
  type TemplateStatus,
  type TemplateStatusInfo,
} from './types.js';
import { HttpProblem } from '../lib/problems.js';

export const DEFAULT_GRAPH_URL = 'https://graph.facebook.com/v23.0';

export interface CloudApiOptions {
  baseUrl?: string;
  /** Per attempt, body included. */
  timeoutMs?: number;
  /** Extra attempts after the first, for the failures that allow one. */
  maxRetries?: number;
  backoffBaseMs?: number;
  /** A Retry-After longer than this is not waited out here: the caller gets 429 with it instead. */
  maxRetryDelayMs?: number;
  /** When set, every call carries `appsecret_proof`, so a leaked token alone is not enough. */
  appSecret?: string;
  /** The Meta app id: the resumable upload API (template media samples) uploads to `/{app-id}/uploads`. */
  appId?: string;
  /** Bounds list walks, so a provider that keeps answering `next` cannot keep us busy. */
  maxPages?: number;
  random?: () => number;
}

/**
 * `idempotent`: any transient failure may be retried. `unsent`: only failures proving the provider
 * did not act (rate limited, connection refused), because the request has effects.
 */
type RetryPolicy = 'idempotent' | 'unsent';

interface CallOptions {
  query?: Record<string, string>;
  /** JSON, a FormData (multipart), or raw bytes (resumable upload). */
  body?: unknown;
  /** Extra headers; may replace the bearer authorization (the upload session wants `OAuth`). */
  headers?: Record<string, string>;
  retry: RetryPolicy;
}

interface Page<T> {
  data?: T[];
  paging?: { cursors?: { after?: string }; next?: string };
}

interface GraphTemplate {
  id: string;
  name: string;
  language: string;
  status: string;
  category: string;
  rejected_reason?: string;
  quality_score?: { score?: string };
}

interface GraphProduct {
  id: string;
  retailer_id?: string;
  name?: string;
  description?: string;
  price?: string;
  sale_price?: string;
  currency?: string;
  availability?: string;
  image_url?: string;
  url?: string;
}

export class CloudApiProvider implements ChatProvider {
  readonly kind = 'cloud_api' as const;
  private readonly baseUrl: string;
  private readonly timeoutMs: number;
  private readonly maxRetries: number;
  private readonly backoffBaseMs: number;
  private readonly maxRetryDelayMs: number;
  private readonly maxPages: number;
  private readonly random: () => number;

  constructor(private readonly options: CloudApiOptions = {}) {
    this.baseUrl = (options.baseUrl ?? DEFAULT_GRAPH_URL).replace(/\/+$/, '');
    this.timeoutMs = options.timeoutMs ?? 15_000;
    this.maxRetries = options.maxRetries ?? 2;
    this.backoffBaseMs = options.backoffBaseMs ?? 250;
    this.maxRetryDelayMs = options.maxRetryDelayMs ?? 5_000;
    this.maxPages = options.maxPages ?? 50;
    this.random = options.random ?? Math.random;
  }

  async sendMessage(number: ProviderNumber, to: string, message: OutboundMessage, options: SendOptions = {}): Promise<SendResult> {
    const marketing = options.route === 'marketing_messages';
    const body = {
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to: to.replace(/^\+/, ''),
      ...message,
      ...(options.replyTo ? { context: { message_id: options.replyTo } } : {}),
      ...(options.bizOpaqueCallbackData ? { biz_opaque_callback_data: options.bizOpaqueCallbackData } : {}),
      ...(marketing && options.productPolicy ? { product_policy: options.productPolicy } : {}),
      ...(marketing && typeof options.activitySharing === 'boolean' ? { message_activity_sharing: options.activitySharing } : {}),
    };
    const path = `${number.phoneNumberId}/${marketing ? 'marketing_messages' : 'messages'}`;
    const res = await this.call<{ contacts?: { wa_id?: string }[]; messages?: { id?: string }[] }>(number, 'POST', path, { body, retry: 'unsent' });
    const id = res.messages?.[0]?.id;
    if (!id) throw new ProviderError({ kind: 'invalid_response', httpStatus: 200, message: 'The provider accepted the message without an id.' });
    return { providerMessageId: id, waId: res.contacts?.[0]?.wa_id ?? null };
  }

  async markRead(number: ProviderNumber, messageId: string, options: { typing?: boolean } = {}): Promise<void> {
    const body = {
      messaging_product: 'whatsapp',
      status: 'read',
      message_id: messageId,
      ...(options.typing ? { typing_indicator: { type: 'text' } } : {}),
    };
    // Marking read twice changes nothing: safe to retry like a read.
    const res = await this.call<{ success?: boolean }>(number, 'POST', `${number.phoneNumberId}/messages`, { body, retry: 'idempotent' });
    if (res.success !== true) throw new ProviderError({ kind: 'invalid_response', httpStatus: 200, message: 'The provider did not confirm the read receipt.' });
  }

  async listPhoneNumbers(account: ProviderAccount): Promise<ProviderPhoneNumber[]> {
    const fields = 'id,display_phone_number,verified_name,status,quality_rating,messaging_limit_tier';
    const rows = await this.list<Record<string, string | undefined>>(account, `${account.wabaId}/phone_numbers`, { fields });
    return rows.map((n) => ({
      phoneNumberId: String(n.id),
      displayPhoneNumber: `+${(n.display_phone_number ?? '').replace(/\D/g, '')}`,
      verifiedName: n.verified_name ?? '',
      status: n.status ?? 'CONNECTED',
      qualityRating: n.quality_rating ?? 'UNKNOWN',
      messagingLimitTier: n.messaging_limit_tier ?? null,
    }));
  }

  async subscribeWebhooks(account: ProviderAccount) {
    // Subscribing twice is harmless, so this write may be retried like a read.
    const res = await this.call<{ success?: boolean }>(account, 'POST', `${account.wabaId}/subscribed_apps`, { retry: 'idempotent' });
    return { subscribed: res.success === true, fields: ['messages'] };
  }

  async createTemplate(account: ProviderAccount, input: TemplateCreateInput): Promise<TemplateCreated> {
    const body = {
      name: input.name,
      language: input.language,
      category: input.category,
      ...(input.allowCategoryChange ? { allow_category_change: true } : {}),
      components: input.components,
    };
    const res = await this.call<{ id: string; status: string; category: string }>(account, 'POST', `${account.wabaId}/message_templates`, {
      body,
      retry: 'unsent',
    });
    return { id: String(res.id), status: templateStatus(res.status), category: (res.category ?? input.category) as TemplateCategory };
  }

  async deleteTemplate(account: ProviderAccount, template: { name: string; id: string | null }): Promise<void> {
    // With hsm_id only that language goes; by name alone, every language of the name would.
    const query: Record<string, string> = { name: template.name, ...(template.id ? { hsm_id: template.id } : {}) };
    // Deleting twice answers an error, not a second deletion: safe to retry only if unsent.
    await this.call<{ success?: boolean }>(account, 'DELETE', `${account.wabaId}/message_templates`, { query, retry: 'unsent' });
  }

  async getTemplateStatuses(account: ProviderAccount, templates: TemplateRef[]): Promise<TemplateStatusInfo[]> {
    const fields = 'id,name,language,status,category,rejected_reason,quality_score';
    const all = await this.list<GraphTemplate>(account, `${account.wabaId}/message_templates`, { fields, limit: '100' });
    const byId = new Map(all.map((t) => [String(t.id), t]));
    const byName = new Map(all.map((t) => [`${t.name}\u0000${t.language}`, t]));
    const out: TemplateStatusInfo[] = [];
    for (const ref of templates) {
      const t = (ref.id ? byId.get(ref.id) : undefined) ?? byName.get(`${ref.name}\u0000${ref.language}`);
      if (!t) continue;
      out.push({
        id: String(t.id),
        name: t.name,
        language: t.language,
        status: templateStatus(t.status),
        category: t.category as TemplateCategory,
        rejectedReason: t.rejected_reason && t.rejected_reason !== 'NONE' ? t.rejected_reason : null,
        qualityScore: t.quality_score?.score ?? null,
      });
    }
    return out;
  }

  async getBusinessProfile(number: ProviderNumber): Promise<BusinessProfile> {
    const fields = 'about,address,description,email,profile_picture_url,websites,vertical';
    const res = await this.call<{ data?: Record<string, unknown>[] }>(number, 'GET', `${number.phoneNumberId}/whatsapp_business_profile`, {
      query: { fields },
      retry: 'idempotent',
    });
    const p = res.data?.[0] ?? {};
    const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v : null);
    return {
      about: str(p.about),
      address: str(p.address),
      description: str(p.description),
      email: str(p.email),
      profilePictureUrl: str(p.profile_picture_url),
      websites: Array.isArray(p.websites) ? p.websites.filter((w): w is string => typeof w === 'string') : [],
      vertical: str(p.vertical),
    };
  }

  async listCatalogs(account: ProviderAccount): Promise<ProviderCatalog[]> {
    const rows = await this.list<{ id: string; name?: string }>(account, `${account.wabaId}/product_catalogs`, { fields: 'id,name' }, true);
    return rows.map((c) => ({ id: String(c.id), name: c.name ?? '' }));
  }

  async listProducts(account: ProviderAccount, catalogId: string): Promise<ProviderProduct[]> {
    const fields = 'id,retailer_id,name,description,price,sale_price,currency,availability,image_url,url';
    const rows = await this.list<GraphProduct>(account, `${encodeURIComponent(catalogId)}/products`, { fields, limit: '100' }, true);
    return rows.map((p) => {
      const currency = (p.currency ?? 'USD').toUpperCase();
      return {
        id: String(p.id),
        retailerId: p.retailer_id ?? String(p.id),
        name: p.name ?? '',
        description: p.description || null,
        price: toMinorUnits(p.price, currency),
        salePrice: toMinorUnits(p.sale_price, currency),
        currency,
        // Graph spells availability with spaces ("in stock"); the contract uses snake_case.
        availability: (p.availability ?? 'in stock').toLowerCase().replace(/\s+/g, '_'),
        imageUrl: p.image_url || null,
        url: p.url || null,
      };
    });
  }

  async getMarketingMessagesStatus(account: ProviderAccount): Promise<MarketingOnboardingStatus> {
    const res = await this.call<{ marketing_messages_onboarding_status?: string }>(account, 'GET', account.wabaId, {
      query: { fields: 'marketing_messages_onboarding_status' },
      retry: 'idempotent',
    });
    const s = res.marketing_messages_onboarding_status ?? '';
    if (s === 'ONBOARDED') return 'ONBOARDED';
    if (s.startsWith('PENDING')) return 'PENDING';
    if (s.startsWith('INELIGIBLE')) return 'INELIGIBLE';
    return 'NOT_STARTED';
  }

  async uploadMedia(number: ProviderNumber, file: MediaFile): Promise<{ id: string }> {
    // Graph's form: messaging_product, the file part (its type is what Meta checks) and `type`.
    const form = new FormData();
    form.set('messaging_product', 'whatsapp');
    form.set('type', file.mimeType);
    form.set('file', new Blob([file.bytes as Uint8Array<ArrayBuffer>], { type: file.mimeType }), file.filename);
    // An upload that timed out may have created media; a second one only leaves an orphan that
    // expires, but the caller is told rather than waiting twice on a large body.
    const res = await this.call<{ id?: string | number }>(number, 'POST', `${number.phoneNumberId}/media`, { body: form, retry: 'unsent' });
    if (res.id === undefined || res.id === '')
      throw new ProviderError({ kind: 'invalid_response', httpStatus: 200, message: 'The provider accepted the upload without an id.' });
    return { id: String(res.id) };
  }

  async createFlow(account: ProviderAccount, input: FlowCreateInput): Promise<{ id: string }> {
    const created = await this.call<{ id?: string | number }>(account, 'POST', `${account.wabaId}/flows`, {
      body: { name: input.name, categories: input.categories },
      retry: 'unsent',
    });
    if (created.id === undefined || created.id === '')
      throw new ProviderError({ kind: 'invalid_response', httpStatus: 200, message: 'The provider created the Flow without an id.' });
    const id = String(created.id);
    try {
      // The Flow JSON goes up as a file; uploading it again replaces it, so this may be retried.
      const form = new FormData();
      form.set('file', new Blob([input.flowJson], { type: 'application/json' }), 'flow.json');
      form.set('name', 'flow.json');
      form.set('asset_type', 'FLOW_JSON');
      const res = await this.call<{ validation_errors?: { error?: string; message?: string; path?: string }[] }>(account, 'POST', `${id}/assets`, {
        body: form,
        retry: 'idempotent',
      });
      const errors = res.validation_errors ?? [];
      if (errors.length) {
        const details = errors
          .slice(0, 5)
          .map((e) => `${e.path ? `${e.path}: ` : ''}${e.message ?? e.error ?? 'invalid'}`)
          .join('; ');
        throw new ProviderError({ code: 139001, httpStatus: 400, message: 'The provider refused the Flow JSON.', details });
      }
    } catch (error) {
      // A draft without (valid) JSON is of no use: remove it so nothing is left at the provider.
      await this.call(account, 'DELETE', id, { retry: 'idempotent' }).catch(() => undefined);
      throw error;
    }
    return { id };
  }

  async publishFlow(account: ProviderAccount, flowId: string): Promise<void> {
    // Publishing twice is refused by the provider, not repeated: safe to retry like a read.
    await this.call<{ success?: boolean }>(account, 'POST', `${encodeURIComponent(flowId)}/publish`, { retry: 'idempotent' });
  }

  /**
   * A template media sample through the resumable upload API: `POST /{app-id}/uploads` opens a
   * session (`upload:…`), `POST /{session}` with the bytes answers the handle `h` that template
   * creation takes as `example.header_handle`. Without a configured app id there is no session
   * to open: 422 naming the missing setting, never a call.
   */
  async uploadSample(account: ProviderAccount, file: MediaFile): Promise<{ handle: string }> {
    if (!this.options.appId) {
      throw new HttpProblem(
        422,
        'unprocessable',
        'Media samples for Cloud API templates need the Meta app id (PROVIDER_APP_ID), which this server does not have; use a TEXT header or none.',
      );
    }
    const query = { file_name: file.filename, file_length: String(file.bytes.length), file_type: file.mimeType };
    const session = await this.call<{ id?: string }>(account, 'POST', `${encodeURIComponent(this.options.appId)}/uploads`, { query, retry: 'unsent' });
    if (typeof session.id !== 'string' || !/^upload:[^/]+$/.test(session.id)) {
      throw new ProviderError({ kind: 'invalid_response', httpStatus: 200, message: 'The provider opened no upload session.' });
    }
    const done = await this.call<{ h?: string }>(account, 'POST', session.id, {
      body: file.bytes,
      headers: { authorization: `OAuth ${account.accessToken}`, file_offset: '0' },
      retry: 'unsent',
    });
    if (typeof done.h !== 'string' || done.h === '')
      throw new ProviderError({ kind: 'invalid_response', httpStatus: 200, message: 'The provider answered the upload without a handle.' });
    return { handle: done.h };
  }

  /**
   * An inbound medium: `GET /{media-id}` answers a short-lived URL (and the type and size), which
   * is fetched with the same bearer token. The token goes only to the provider's own hosts (or to
   * the configured Graph origin, as a fake provider is): a URL elsewhere is the provider's failure.
   * Reading the URL is a read, retried like one before any byte is taken.
   */
  async downloadMedia(number: ProviderNumber, mediaId: string, maxBytes: number): Promise<MediaDownload> {
    const meta = await this.call<{ url?: string; mime_type?: string; file_size?: number | string }>(number, 'GET', encodeURIComponent(mediaId), {
      query: { phone_number_id: number.phoneNumberId },
      retry: 'idempotent',
    });
    const declared = Number(meta.file_size);
    if (Number.isFinite(declared) && declared > maxBytes) throw mediaTooLarge(maxBytes);
    if (typeof meta.url !== 'string' || !this.mediaHostAllowed(meta.url)) {
      throw new ProviderError({ kind: 'invalid_response', httpStatus: 200, message: 'The provider answered no usable media URL.' });
    }
    for (let attempt = 0; ; attempt++) {
      let failure: ProviderError;
      try {
        const response = await fetch(meta.url, {
          headers: { authorization: `Bearer ${number.accessToken}` },
          redirect: 'error',
          signal: AbortSignal.timeout(this.timeoutMs * 4),
        });
        if (response.ok && response.body) {
          const length = Number(response.headers.get('content-length'));
          if (Number.isFinite(length) && length > maxBytes) {
            await response.body.cancel();
            throw mediaTooLarge(maxBytes);
          }
          const size = Number.isFinite(length) && response.headers.has('content-length') ? length : Number.isFinite(declared) ? declared : null;
          const mimeType = meta.mime_type || response.headers.get('content-type') || 'application/octet-stream';
          return { mimeType, size, body: response.body };
        }
        failure = graphError(response.status, await response.text(), response.headers.get('retry-after'));
      } catch (err) {
        if (err instanceof HttpProblem) throw err;
        failure = fetchFailure(err);
      }
      const delay = this.retryDelay(failure, attempt, 'idempotent');
      if (delay === null) throw failure;
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }

  private mediaHostAllowed(raw: string): boolean {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      return false;
    }
    if (url.origin === new URL(this.baseUrl).origin) return true;
    return url.protocol === 'https:' && /(^|\.)(fbsbx\.com|facebook\.com|fbcdn\.net|whatsapp\.net)$/.test(url.hostname);
  }

  /** Walks `after` cursors instead of following `paging.next`, which could name another host. */
  private async list<T>(account: ProviderAccount, path: string, query: Record<string, string>, complete = false): Promise<T[]> {
    const out: T[] = [];
    let after: string | undefined;
    for (let page = 0; page < this.maxPages; page++) {
      const res = await this.call<Page<T>>(account, 'GET', path, { query: after ? { ...query, after } : query, retry: 'idempotent' });
      out.push(...(res.data ?? []));
      after = res.paging?.next ? res.paging.cursors?.after : undefined;
      if (!after) break;
    }
    // `complete`: callers that replace their copy with the list (catalog sync deletes what is
    // missing) must not get a silently truncated one.
    if (complete && after) {
      throw new ProviderError({ kind: 'invalid_response', message: `${path} has more than ${this.maxPages} pages; the list was not read to its end.` });
    }
    return out;
  }

  private async call<T>(account: ProviderAccount, method: 'GET' | 'POST' | 'DELETE', path: string, opts: CallOptions): Promise<T> {
    const token = account.accessToken;
    if (!token) throw new ProviderError({ code: 190, message: 'No access token is stored for this business account.' });
    const url = new URL(`${this.baseUrl}/${path}`);
    for (const [k, v] of Object.entries(opts.query ?? {})) url.searchParams.set(k, v);
    if (this.options.appSecret) url.searchParams.set('appsecret_proof', createHmac('sha256', this.options.appSecret).update(token).digest('hex'));
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'application/json' };
    // FormData sets its own multipart content type with the boundary.
    if (Buffer.isBuffer(opts.body)) headers['content-type'] = 'application/octet-stream';
    else if (opts.body !== undefined && !(opts.body instanceof FormData)) headers['content-type'] = 'application/json';
    Object.assign(headers, opts.headers);

    for (let attempt = 0; ; attempt++) {
      // The parsed body on success, otherwise the ProviderError to retry or throw.
      let outcome: unknown;
      try {
        const answer = await exchange(url, method, headers, opts.body, this.timeoutMs);
        outcome = answer.status >= 200 && answer.status < 300 ? parseOk(answer.text, answer.status) : graphError(answer.status, answer.text, answer.retryAfter);
      } catch (err) {
        outcome = fetchFailure(err);
      }
      if (!(outcome instanceof ProviderError)) return outcome as T;
      const delay = this.retryDelay(outcome, attempt, opts.retry);
      if (delay === null) throw outcome;
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }

  /** Full-jitter exponential backoff, or the provider's Retry-After; null means give up now. */
  private retryDelay(error: ProviderError, attempt: number, policy: RetryPolicy): number | null {
    if (attempt >= this.maxRetries) return null;
    const allowed = policy === 'idempotent' ? error.transient : error.rateLimited || error.notSent;
    if (!allowed) return null;
    if (error.retryAfterSec !== null) {
      const wait = error.retryAfterSec * 1000;
      return wait > this.maxRetryDelayMs ? null : wait + this.random() * this.backoffBaseMs;
    }
    return this.random() * Math.min(this.maxRetryDelayMs, this.backoffBaseMs * 2 ** attempt);
  }
}

/**
 * One HTTP exchange with Graph: its status, body and Retry-After. JSON and bytes go through
 * undici's request, not fetch: no Request, Response, web streams or AbortSignal per call, which
 * made most of a campaign send's CPU; a 3xx is not followed (a Graph error). A multipart form
 * (an upload) goes through fetch, which encodes FormData.
 */
async function exchange(
  url: URL,
  method: string,
  headers: Record<string, string>,
  body: unknown,
  timeoutMs: number,
): Promise<{ status: number; text: string; retryAfter: string | null }> {
  if (body instanceof FormData) {
    const response = await fetch(url, { method, headers, body, redirect: 'error', signal: AbortSignal.timeout(timeoutMs) });
    return { status: response.status, text: await response.text(), retryAfter: response.headers.get('retry-after') };
  }
  const payload = body === undefined ? undefined : Buffer.isBuffer(body) ? body : JSON.stringify(body);
  const response = await request(url, { method, headers, body: payload, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
  const retryAfter = response.headers['retry-after'];
  return { status: response.statusCode, text: await response.body.text(), retryAfter: typeof retryAfter === 'string' ? retryAfter : null };
}

/** The parsed body, or the error to report: a 2xx that is not JSON is the provider's failure. */
function parseOk(text: string, status: number): unknown {
  try {
    return text ? JSON.parse(text) : {};
  } catch {
    return new ProviderError({ kind: 'invalid_response', httpStatus: status, message: 'The provider answered with a body that is not JSON.' });
  }
}

function graphError(status: number, text: string, retryAfter: string | null): ProviderError {
  let e: Record<string, any> = {};
  try {
    const parsed = JSON.parse(text);
    if (parsed && typeof parsed.error === 'object' && parsed.error) e = parsed.error;
  } catch {
    // A proxy's HTML error page: keep the HTTP status, there is no Graph code.
  }
  return new ProviderError({
    kind: 'api',
    httpStatus: status,
    code: typeof e.code === 'number' ? e.code : null,
    subcode: typeof e.error_subcode === 'number' ? e.error_subcode : null,
    message: typeof e.message === 'string' ? e.message : `The provider answered HTTP ${status}.`,
    details: typeof e.error_data?.details === 'string' ? e.error_data.details : typeof e.error_user_msg === 'string' ? e.error_user_msg : null,
    fbtraceId: typeof e.fbtrace_id === 'string' ? e.fbtrace_id : null,
    transient: e.is_transient === true,
    retryAfterSec: parseRetryAfter(retryAfter),
  });
}

/** undici's codes for an answer (or its body) that did not come in time. */
const TIMED_OUT = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/** A failure of fetch (the error's cause holds the code) or of undici's request (the error does). */
function fetchFailure(err: unknown): ProviderError {
  const e = err as { name?: string; code?: string; cause?: { code?: string } };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError' || TIMED_OUT.has(e?.code ?? '')) {
    return new ProviderError({ kind: 'timeout', message: 'The provider did not answer in time.' });
  }
  const code = e?.code ?? e?.cause?.code;
  return new ProviderError({ kind: 'network', message: `Could not reach the provider${code ? ` (${code})` : ''}.`, notSent: code === 'ECONNREFUSED' });
}

function parseRetryAfter(value: string | null): number | null {
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

/** Our contract knows five states; Graph has more, each folded into the one that says whether it can be sent. */
function templateStatus(s: string | undefined): TemplateStatus {
  switch (s) {
    case 'APPROVED':
    case 'REJECTED':
    case 'PAUSED':
    case 'PENDING':
      return s;
    case 'IN_APPEAL':
      return 'PENDING';
    default:
      return 'DISABLED';
  }
}

/** Graph gives prices as formatted strings ("€1,234.50", "12.00 USD"); the contract wants minor units. */
export function toMinorUnits(formatted: string | undefined, currency: string): number | null {
  const m = formatted?.match(/\d[\d.,\s]*/);
  if (!m) return null;
  const raw = m[0].replace(/\s/g, '');
  const sep = Math.max(raw.lastIndexOf('.'), raw.lastIndexOf(','));
  const digits = (sep >= 0 && raw.length - sep - 1 <= 2 ? [raw.slice(0, sep), raw.slice(sep + 1)] : [raw, '']).map((p) => p.replace(/\D/g, ''));
  let exponent = 2;
  try {
    exponent = new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2;
  } catch {
    // Unknown currency code: assume cents.
  }
  return Number(digits[0] || '0') * 10 ** exponent + Math.round(Number(`0.${digits[1] || '0'}`) * 10 ** exponent);
}
