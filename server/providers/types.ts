// The chat provider behind sends, templates, numbers and catalogs: Meta's Cloud API in production,
// the sandbox on a laptop. Messages use the Graph API's wire shapes so the Cloud adapter passes
// them through unchanged and the sandbox is checked against the very objects Meta would receive.
import { HttpProblem } from '../lib/problems.js';

export type ProviderKind = 'sandbox' | 'cloud_api';

/** A business account at the provider. The caller decrypts the token for the call; adapters never keep it. */
export interface ProviderAccount {
  wabaId: string;
  accessToken?: string | null;
}

/** A sender number of a business account. */
export interface ProviderNumber extends ProviderAccount {
  phoneNumberId: string;
}

// ---- Outbound messages (Graph `POST /{phone-number-id}/messages` bodies, minus the envelope) ----

/** Media by URL (`link`, the provider fetches it) or by a media id from `uploadMedia` (`id`). */
export type MediaRef = { link: string; id?: never } | { id: string; link?: never };

export type MediaLink = MediaRef & { caption?: string };

/** A file for `uploadMedia`: its bytes and the type detected from them. */
export interface MediaFile {
  bytes: Buffer;
  mimeType: string;
  filename: string;
}

/** An inbound medium's bytes as the provider serves them, read as they arrive. */
export interface MediaDownload {
  mimeType: string;
  /** The size the provider declared; null when it did not say. */
  size: number | null;
  body: AsyncIterable<Uint8Array>;
}

export type InteractiveHeader =
  | { type: 'text'; text: string }
  | { type: 'image'; image: { link: string } }
  | { type: 'video'; video: { link: string } }
  | { type: 'document'; document: { link: string; filename?: string } };

interface InteractiveBase {
  header?: InteractiveHeader;
  body: { text: string };
  footer?: { text: string };
}

export interface InteractiveButtons extends InteractiveBase {
  type: 'button';
  action: { buttons: { type: 'reply'; reply: { id: string; title: string } }[] };
}

export interface InteractiveList extends InteractiveBase {
  type: 'list';
  action: { button: string; sections: { title?: string; rows: { id: string; title: string; description?: string }[] }[] };
}

/** A WhatsApp Flow (a published form): Graph `interactive.type = flow`, answered by an `nfm_reply`. */
export interface InteractiveFlow extends InteractiveBase {
  type: 'flow';
  action: {
    name: 'flow';
    parameters: {
      flow_message_version: '3';
      flow_id?: string;
      flow_name?: string;
      flow_cta: string;
      flow_token?: string;
      flow_action?: 'navigate' | 'data_exchange';
      flow_action_payload?: { screen: string; data?: Record<string, unknown> };
      mode?: 'published' | 'draft';
    };
  };
}

/** A call-to-action button that opens a URL: Graph `interactive.type = cta_url`. */
export interface InteractiveCtaUrl extends InteractiveBase {
  type: 'cta_url';
  action: { name: 'cta_url'; parameters: { display_text: string; url: string } };
}

/** A "Send location" button: Graph `interactive.type = location_request_message`. */
export interface InteractiveLocationRequest {
  type: 'location_request_message';
  body: { text: string };
  action: { name: 'send_location' };
}

export type Interactive = InteractiveButtons | InteractiveList | InteractiveFlow | InteractiveCtaUrl | InteractiveLocationRequest;

/** A contact card in Graph's `contacts` message shape. */
export interface ContactCard {
  name: { formatted_name: string; first_name?: string; last_name?: string; middle_name?: string; prefix?: string; suffix?: string };
  phones?: { phone: string; type?: string; wa_id?: string }[];
  emails?: { email: string; type?: string }[];
  urls?: { url: string; type?: string }[];
  org?: { company?: string; department?: string; title?: string };
  birthday?: string;
}

export type TemplateParameter =
  | { type: 'text'; text: string; parameter_name?: string }
  | { type: 'currency'; currency: { fallback_value: string; code: string; amount_1000: number } }
  | { type: 'date_time'; date_time: { fallback_value: string } }
  | { type: 'image'; image: MediaRef }
  | { type: 'video'; video: MediaRef }
  | { type: 'document'; document: MediaRef & { filename?: string } }
  | { type: 'location'; location: { latitude: number; longitude: number; name?: string; address?: string } }
  | { type: 'payload'; payload: string }
  | { type: 'coupon_code'; coupon_code: string }
  | { type: 'limited_time_offer'; limited_time_offer: { expiration_time_ms: number } }
  | { type: 'action'; action: Record<string, unknown> };

export type TemplateSendComponent =
  | { type: 'header' | 'body' | 'limited_time_offer'; parameters: TemplateParameter[] }
  | { type: 'button'; sub_type: string; index: number | string; parameters: TemplateParameter[] }
  | { type: 'carousel'; cards: { card_index: number; components: TemplateSendComponent[] }[] };

export interface TemplateMessage {
  name: string;
  language: { code: string; policy?: 'deterministic' };
  components?: TemplateSendComponent[];
}

export type OutboundMessage =
  | { type: 'text'; text: { body: string; preview_url?: boolean } }
  | { type: 'image'; image: MediaLink }
  | { type: 'video'; video: MediaLink }
  | { type: 'document'; document: MediaLink & { filename?: string } }
  | { type: 'audio'; audio: MediaRef }
  | { type: 'location'; location: { latitude: number; longitude: number; name?: string; address?: string } }
  | { type: 'template'; template: TemplateMessage }
  | { type: 'interactive'; interactive: Interactive }
  | { type: 'reaction'; reaction: { message_id: string; emoji: string } }
  | { type: 'sticker'; sticker: MediaRef }
  | { type: 'contacts'; contacts: ContactCard[] };

export type SendRoute = 'cloud_api' | 'marketing_messages';

export interface SendOptions {
  /** The provider id (`wamid.…`) of the message this one replies to. */
  replyTo?: string;
  /** `marketing_messages` only for marketing templates; the API layer decides. */
  route?: SendRoute;
  productPolicy?: 'CLOUD_API_FALLBACK' | 'STRICT';
  activitySharing?: boolean | null;
  /** Echoed back in status webhooks: lets a campaign find its recipient row without a lookup. */
  bizOpaqueCallbackData?: string;
}

export interface SendResult {
  providerMessageId: string;
  /** The recipient's WhatsApp id as the provider resolved it. */
  waId: string | null;
}

// ---- Numbers, templates, profile, commerce, marketing messages ----

export interface ProviderPhoneNumber {
  phoneNumberId: string;
  /** E.164 (`+15550100100`), whatever formatting the provider used. */
  displayPhoneNumber: string;
  verifiedName: string;
  status: string;
  qualityRating: string;
  messagingLimitTier: string | null;
}

export type TemplateCategory = 'MARKETING' | 'UTILITY' | 'AUTHENTICATION';
export type TemplateStatus = 'PENDING' | 'APPROVED' | 'REJECTED' | 'PAUSED' | 'DISABLED';

/** A template component in Graph's create shape (`{type: 'BODY', text, example}`); the API layer validates it. */
export type TemplateDefinitionComponent = { type: string } & Record<string, unknown>;

export interface TemplateCreateInput {
  name: string;
  language: string;
  category: TemplateCategory;
  allowCategoryChange?: boolean;
  components: TemplateDefinitionComponent[];
}

export interface TemplateCreated {
  id: string;
  status: TemplateStatus;
  category: TemplateCategory;
}

/** Which templates a status sync asks about; the caller knows its own templates. */
export interface TemplateRef {
  id?: string | null;
  name: string;
  language: string;
  category?: TemplateCategory;
}

export interface TemplateStatusInfo {
  id: string;
  name: string;
  language: string;
  status: TemplateStatus;
  category: TemplateCategory;
  rejectedReason: string | null;
  qualityScore: string | null;
}

export interface BusinessProfile {
  about: string | null;
  address: string | null;
  description: string | null;
  email: string | null;
  profilePictureUrl: string | null;
  websites: string[];
  vertical: string | null;
}

export interface ProviderCatalog {
  id: string;
  name: string;
}

export interface ProviderProduct {
  id: string;
  retailerId: string;
  name: string;
  description: string | null;
  /** Minor units of `currency`; null when the provider gave no parseable price. */
  price: number | null;
  salePrice: number | null;
  currency: string;
  availability: string;
  imageUrl: string | null;
  url: string | null;
}

/** A Flow to create: `categories` are the provider's (SIGN_UP, APPOINTMENT_BOOKING, …, OTHER). */
export interface FlowCreateInput {
  name: string;
  categories: string[];
  /** The Flow JSON document, serialised. */
  flowJson: string;
}

export type MarketingOnboardingStatus = 'NOT_STARTED' | 'PENDING' | 'ONBOARDED' | 'INELIGIBLE';

export interface ChatProvider {
  readonly kind: ProviderKind;
  sendMessage(number: ProviderNumber, to: string, message: OutboundMessage, options?: SendOptions): Promise<SendResult>;
  listPhoneNumbers(account: ProviderAccount): Promise<ProviderPhoneNumber[]>;
  subscribeWebhooks(account: ProviderAccount): Promise<{ subscribed: boolean; fields: string[] }>;
  createTemplate(account: ProviderAccount, input: TemplateCreateInput): Promise<TemplateCreated>;
  /** Deletes one language of a template (Graph `DELETE /{waba-id}/message_templates?name=…&hsm_id=…`). */
  deleteTemplate(account: ProviderAccount, template: { name: string; id: string | null }): Promise<void>;
  /** Answers for the refs the provider knows; unknown ones are left out. */
  getTemplateStatuses(account: ProviderAccount, templates: TemplateRef[]): Promise<TemplateStatusInfo[]>;
  getBusinessProfile(number: ProviderNumber): Promise<BusinessProfile>;
  listCatalogs(account: ProviderAccount): Promise<ProviderCatalog[]>;
  listProducts(account: ProviderAccount, catalogId: string): Promise<ProviderProduct[]>;
  getMarketingMessagesStatus(account: ProviderAccount): Promise<MarketingOnboardingStatus>;
  /** Creates a WhatsApp Flow (DRAFT) and uploads its Flow JSON; refused JSON leaves no Flow behind. */
  createFlow(account: ProviderAccount, input: FlowCreateInput): Promise<{ id: string }>;
  /** Publishes a DRAFT Flow; final (a published Flow can no longer be edited). */
  publishFlow(account: ProviderAccount, flowId: string): Promise<void>;
  /** Uploads a file for a number (Graph `POST /{phone-number-id}/media`); the id is usable in sends for 30 days. */
  uploadMedia(number: ProviderNumber, file: MediaFile): Promise<{ id: string }>;
  /** Uploads a template media sample (Graph resumable upload); the handle goes in `example.header_handle`. */
  uploadSample(account: ProviderAccount, file: MediaFile): Promise<{ handle: string }>;
  /**
   * The bytes of an inbound medium by the provider's media id (Graph `GET /{media-id}`, then its
   * URL with the token). A declared size over `maxBytes` is refused before any byte is read (413).
   */
  downloadMedia(number: ProviderNumber, mediaId: string, maxBytes: number): Promise<MediaDownload>;
  /**
   * Tells the provider the business read the customer's message `messageId` (its wamid) and
   * every earlier one: the customer sees blue ticks (Graph `POST /{phone-number-id}/messages`
   * `{messaging_product, status: "read", message_id}`). With `typing`, the customer also sees
   * the typing indicator until the next reply or for 25 seconds (`typing_indicator: {type: "text"}`).
   */
  markRead(number: ProviderNumber, messageId: string, options?: { typing?: boolean }): Promise<void>;
}

// ---- Inbound webhook payloads (spec/webhooks/provider.tsp; only what the sandbox builds) ----

export interface ProviderErrorObject {
  code: number;
  title: string;
  message?: string;
  error_data?: { details: string };
  href?: string;
}

export interface ProviderStatus {
  id: string;
  status: 'sent' | 'delivered' | 'read' | 'failed';
  timestamp: string;
  recipient_id: string;
  biz_opaque_callback_data?: string;
  conversation?: { id: string; expiration_timestamp?: string; origin?: { type: string } };
  pricing?: { billable?: boolean; pricing_model: string; category: string; type?: string };
  errors?: ProviderErrorObject[];
}

/** Inbound content: everything of an inbound message but its envelope (`from`, `id`, `timestamp`). */
export type InboundContent =
  | { type: 'text'; text: { body: string } }
  | {
      type: 'image' | 'document' | 'audio' | 'video' | 'sticker';
      media: { mime_type: string; caption?: string; filename?: string };
      /** The file the simulated phone sends (sandbox): kept so a download returns it. */
      bytes?: Buffer;
    }
  | { type: 'location'; location: { latitude: number; longitude: number; name?: string; address?: string } }
  | { type: 'button'; button: { payload: string; text: string } }
  | {
      type: 'interactive';
      interactive: {
        type: 'button_reply' | 'list_reply';
        button_reply?: { id: string; title: string };
        list_reply?: { id: string; title: string; description?: string };
      };
    }
  | { type: 'interactive'; interactive: { type: 'nfm_reply'; nfm_reply: { name?: string; body?: string; response_json: string } } }
  | { type: 'reaction'; reaction: { message_id: string; emoji?: string } };

export interface ProviderInboundMessage {
  from: string;
  id: string;
  timestamp: string;
  type: string;
  context?: { from?: string; id?: string };
  [content: string]: unknown;
}

export interface ProviderChangeValue {
  messaging_product: 'whatsapp';
  metadata: { display_phone_number: string; phone_number_id: string };
  contacts?: { profile: { name: string }; wa_id: string }[];
  messages?: ProviderInboundMessage[];
  statuses?: ProviderStatus[];
}

export interface ProviderWebhookPayload {
  object: 'whatsapp_business_account';
  entry: { id: string; changes: { field: 'messages'; value: ProviderChangeValue }[] }[];
}

// ---- Errors ----

/** Codes that mean "slow down": throughput (130429), pair rate (131056), account/app limits (80007, 4). */
const RATE_LIMIT_CODES = new Set([4, 80007, 130429, 131056]);
/** The caller's input is at fault (bad parameter, number, template values, media the provider cannot take: 131053): 422, not a provider outage. */
const CALLER_CODES = new Set([100, 131008, 131009, 131021, 131026, 131051, 131053, 132000, 132001, 132005, 132007, 132012, 132015, 132016]);
/**
 * Seconds to wait when the provider sent no Retry-After: throughput clears within a second, the
 * pair limit allows about one message per 6 s to one user, account and app limits last minutes.
 */
const DEFAULT_RETRY_AFTER: Record<number, number> = { 130429: 1, 131056: 6, 80007: 60, 4: 60 };

export type ProviderErrorKind = 'api' | 'timeout' | 'network' | 'invalid_response';

export interface ProviderErrorInit {
  message: string;
  kind?: ProviderErrorKind;
  code?: number | null;
  subcode?: number | null;
  httpStatus?: number | null;
  retryAfterSec?: number | null;
  details?: string | null;
  fbtraceId?: string | null;
  /** Graph's own `is_transient` hint. */
  transient?: boolean;
  /** The request provably never reached the provider (connection refused), so re-sending is safe. */
  notSent?: boolean;
}

/** 413 for a medium over the download limit, before or while it is read. */
export function mediaTooLarge(maxBytes: number): HttpProblem {
  return new HttpProblem(413, 'payload-too-large', `The file is larger than this server's download limit of ${maxBytes} bytes.`);
}

export class ProviderError extends Error {
  readonly kind: ProviderErrorKind;
  readonly code: number | null;
  readonly subcode: number | null;
  readonly httpStatus: number | null;
  readonly retryAfterSec: number | null;
  readonly details: string | null;
  readonly fbtraceId: string | null;
  readonly notSent: boolean;
  private readonly transientHint: boolean;

  constructor(init: ProviderErrorInit) {
    super(init.message);
    this.name = 'ProviderError';
    this.kind = init.kind ?? 'api';
    this.code = init.code ?? null;
    this.subcode = init.subcode ?? null;
    this.httpStatus = init.httpStatus ?? null;
    this.details = init.details ?? null;
    this.fbtraceId = init.fbtraceId ?? null;
    this.notSent = init.notSent ?? false;
    this.transientHint = init.transient ?? false;
    this.retryAfterSec = init.retryAfterSec ?? (this.code !== null ? (DEFAULT_RETRY_AFTER[this.code] ?? null) : null);
  }

  get rateLimited(): boolean {
    return this.httpStatus === 429 || (this.code !== null && RATE_LIMIT_CODES.has(this.code));
  }

  /** Worth retrying an idempotent request: the failure says nothing about the request itself. */
  get transient(): boolean {
    return this.rateLimited || this.kind === 'timeout' || this.kind === 'network' || (this.httpStatus ?? 0) >= 500 || this.transientHint;
  }

  /**
   * The problem our API answers with, this error kept as its `cause` (for execution steps; never
   * serialised). 190 (our stored token) is the provider's failure, not the caller's.
   */
  toProblem(): HttpProblem {
    const problem = this.problemOf();
    Object.defineProperty(problem, 'cause', { value: this, enumerable: false });
    return problem;
  }

  private problemOf(): HttpProblem {
    const code = this.code ?? undefined;
    const extra = code !== undefined ? { provider_code: code } : {};
    if (code === 131047) {
      return new HttpProblem(
        422,
        'outside-window',
        'More than 24 hours have passed since the customer last wrote; only an approved template can be sent.',
        extra,
      );
    }
    if (this.rateLimited) {
      const wait = Math.max(1, Math.ceil(this.retryAfterSec ?? 1));
      return new HttpProblem(429, 'rate-limited', `The chat provider is rate limiting this number; retry after ${wait} s.`, extra, {
        'Retry-After': String(wait),
      });
    }
    if (this.kind === 'timeout') {
      return new HttpProblem(504, 'provider-error', 'The chat provider did not answer in time; the outcome is unknown and the message was not re-sent.', extra);
    }
    if (code !== undefined && CALLER_CODES.has(code)) {
      return new HttpProblem(422, 'unprocessable', `The chat provider refused the request: ${this.details ?? this.message}`, extra);
    }
    if (code === 190) return new HttpProblem(502, 'provider-error', 'The chat provider refused the stored access token; connect the account again.', extra);
    return new HttpProblem(502, 'provider-error', 'The chat provider failed to handle the request.', extra);
  }
}
