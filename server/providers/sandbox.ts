// The sandbox provider, the default: numbers live in our store, sends are checked against the
// provider's real rules (24-hour window, recipient format, template approval) and answered with a
// wamid, and everything the provider would post back (statuses, a simulated phone's messages) is
// built in Meta's webhook format and handed to `deliverWebhook`, which the server signs and posts
// through its own inbound webhook path. So the rest of the server cannot tell it from the real one.
import { createHash, randomBytes, randomInt } from 'node:crypto';
import type { Kysely } from 'kysely';
import { newId } from '../lib/ids.js';
import { validateFlowJson } from './flow-json-check.js';
import { messageViolations } from './message-rules.js';
import type { Database } from '../store/schema.js';
import {
  ProviderError,
  type BusinessProfile,
  type ChatProvider,
  type FlowCreateInput,
  type InboundContent,
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
  type ProviderStatus,
  type ProviderWebhookPayload,
  type SendOptions,
  type SendResult,
  type TemplateCreateInput,
  type TemplateCreated,
  type TemplateRef,
  type TemplateStatus,
  type TemplateStatusInfo,
} from './types.js';
import { WA_ID } from '../lib/phone.js';

/** How long the typing indicator shows at most (Meta: 25 seconds, or until the reply). */
export const TYPING_MS = 25_000;

const WINDOW_MS = 24 * 60 * 60 * 1000;
export interface StatusDelays {
  sent: number;
  delivered: number;
  read: number;
}

export interface SandboxOptions {
  db: Kysely<Database>;
  deliverWebhook: (payload: ProviderWebhookPayload) => Promise<void>;
  /** Milliseconds before each status; default a few hundred, so a person watching sees them arrive. */
  delays?: Partial<StatusDelays>;
  /** Zero delays (statuses still follow the send, never precede it). */
  testMode?: boolean;
  /** `on-sync`: templates start PENDING and reach their rule's status on the next status sync. */
  templateReview?: 'immediate' | 'on-sync';
  marketingOnboarding?: MarketingOnboardingStatus;
  now?: () => Date;
  /** A webhook hand-off that failed for good (refused as malformed, or the sandbox closed) is reported here. */
  onDeliveryError?: (error: unknown) => void;
  /** Milliseconds before attempt `attempt + 1` of a hand-off that failed; default doubling from 50 ms to 5 s. */
  retryDelayMs?: (attempt: number) => number;
}

/**
 * Whether a failed hand-off may succeed later: anything but a 4xx other than 408 and 429 (a
 * throttled delivery, a database that is away, a conflict that gave up). A payload refused as
 * malformed would be refused again.
 */
export function retryableDelivery(error: unknown): boolean {
  const status = (error as { statusCode?: unknown } | null)?.statusCode;
  return typeof status !== 'number' || status < 400 || status >= 500 || status === 408 || status === 429;
}

const retryDelay = (attempt: number) => Math.min(5000, 50 * 2 ** (attempt - 1));
/** A simulated phone's message is awaited by its sender, who learns of a failure: a few attempts only. */
const INBOUND_ATTEMPTS = 4;

/** The template review rule: names with `reject` are rejected, with `pending` stay in review. */
export function sandboxTemplateStatus(name: string): TemplateStatus {
  if (/reject/i.test(name)) return 'REJECTED';
  if (/pending/i.test(name)) return 'PENDING';
  return 'APPROVED';
}

/** Recipients whose number ends in 0000 are "not on WhatsApp": accepted, then failed with 131026, as Meta does. */
export function isUnreachableSandboxNumber(waId: string): boolean {
  return waId.endsWith('0000');
}

/** Creates a sandbox business account with `numbers` numbers (default 1). */
export async function createSandboxAccount(db: Kysely<Database>, workspaceId: string, options: { name?: string; numbers?: number } = {}) {
  return db.transaction().execute(async (trx) => {
    const account = await trx
      .insertInto('business_accounts')
      .values({ id: newId('waba'), workspace_id: workspaceId, kind: 'sandbox', provider_waba_id: numericId(), name: options.name ?? 'Sandbox' })
      .returningAll()
      .executeTakeFirstOrThrow();
    const numbers = [];
    for (let i = 0; i < (options.numbers ?? 1); i++) numbers.push(await addSandboxNumber(trx, account));
    return { account, numbers };
  });
}

/** Adds a number to a sandbox account; numbers look like Meta's test numbers (+1 555 …). */
export async function addSandboxNumber(db: Kysely<Database>, account: { id: string; workspace_id: string; name: string }) {
  return db
    .insertInto('phone_numbers')
    .values({
      id: newId('pn'),
      workspace_id: account.workspace_id,
      business_account_id: account.id,
      provider_phone_number_id: numericId(),
      display_phone_number: `+1555${String(randomInt(0, 10_000_000)).padStart(7, '0')}`,
      verified_name: account.name,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export class SandboxProvider implements ChatProvider {
  readonly kind = 'sandbox' as const;
  private readonly delays: StatusDelays;
  private readonly now: () => Date;
  /** Inbound times the simulated phone produced, before (or without) the inbound handler storing them. */
  private readonly lastInbound = new Map<string, number>();
  private readonly pending = new Set<Promise<void>>();
  private readonly timers = new Set<{ timer: NodeJS.Timeout; resolve: () => void }>();
  /** Media uploaded since start, `phone-number-id:media-id`; older uploads are found in uploaded_media. */
  private readonly media = new Set<string>();
  /** What the simulated phone shows per chat (`phone-number-id:wa-id`): read through which message, typing until when. */
  private readonly receipts = new Map<string, { readThrough: Date; typingUntil: Date | null }>();
  private closed = false;

  constructor(private readonly options: SandboxOptions) {
    const base = options.testMode ? { sent: 0, delivered: 0, read: 0 } : { sent: 150, delivered: 300, read: 600 };
    this.delays = { ...base, ...options.delays };
    this.now = options.now ?? (() => new Date());
  }

  async sendMessage(number: ProviderNumber, to: string, message: OutboundMessage, options: SendOptions = {}): Promise<SendResult> {
    const pn = await this.number(number.phoneNumberId);
    const waId = to.replace(/^\+/, '');
    if (!WA_ID.test(waId)) {
      throw new ProviderError({
        code: 100,
        httpStatus: 400,
        message: '(#100) Invalid parameter',
        details: `"${to}" is not a valid WhatsApp recipient number.`,
      });
    }
    if (options.route === 'marketing_messages' && message.type !== 'template') {
      throw new ProviderError({
        code: 100,
        httpStatus: 400,
        message: '(#100) Invalid parameter',
        details: 'The marketing messages route sends templates only.',
      });
    }
    // What Meta refuses as "Parameter value is not valid", the sandbox refuses too.
    const violation = messageViolations(message)[0];
    if (violation) {
      throw new ProviderError({
        code: 131009,
        httpStatus: 400,
        message: '(#131009) Parameter value is not valid',
        details: `${violation.path.slice(1).replaceAll('/', '.')}: ${violation.detail}`,
      });
    }
    for (const id of mediaIdsIn(message)) {
      if (!(await this.knowsMedia(pn, id))) {
        throw new ProviderError({
          code: 100,
          httpStatus: 400,
          message: '(#100) Invalid parameter',
          details: `Media id ${id} was not uploaded for this phone number.`,
        });
      }
    }
    if (message.type === 'template') {
      if (sandboxTemplateStatus(message.template.name) !== 'APPROVED') {
        throw new ProviderError({
          code: 132001,
          httpStatus: 404,
          message: '(#132001) Template name does not exist in the translation',
          details: `Template ${message.template.name} is not approved.`,
        });
      }
    } else if (!(await this.insideWindow(pn, waId))) {
      throw new ProviderError({
        code: 131047,
        httpStatus: 400,
        message: '(#131047) Re-engagement message',
        details: 'Message failed to send because more than 24 hours have passed since the customer last replied to this number.',
      });
    }
    const wamid = newWamid();
    const category = message.type !== 'template' ? 'service' : options.route === 'marketing_messages' ? 'marketing' : 'utility';
    this.track(this.emitStatuses(pn, waId, wamid, category, options.bizOpaqueCallbackData));
    return { providerMessageId: wamid, waId };
  }

  async markRead(number: ProviderNumber, messageId: string, options: { typing?: boolean } = {}): Promise<void> {
    const pn = await this.number(number.phoneNumberId);
    // As Meta: only a message the customer sent to this number can be marked read.
    const row = await this.options.db
      .selectFrom('messages')
      .innerJoin('contacts', 'contacts.id', 'messages.contact_id')
      .select(['messages.created_at', 'contacts.phone'])
      .where('messages.phone_number_id', '=', pn.id)
      .where('messages.direction', '=', 'inbound')
      .where('messages.provider_message_id', '=', messageId)
      .executeTakeFirst();
    if (!row) {
      throw new ProviderError({
        code: 100,
        httpStatus: 400,
        message: '(#100) Invalid parameter',
        details: `Message ${messageId} was not received by this number.`,
      });
    }
    const key = `${pn.provider_phone_number_id}:${row.phone.replace(/^\+/, '')}`;
    const before = this.receipts.get(key);
    const at = new Date(row.created_at);
    this.receipts.set(key, {
      readThrough: before && before.readThrough > at ? before.readThrough : at,
      // Meta shows the indicator for up to 25 seconds, or until the reply.
      typingUntil: options.typing ? new Date(this.now().getTime() + TYPING_MS) : (before?.typingUntil ?? null),
    });
  }

  /**
   * What the simulated phone `waId` shows of its chat with `phoneNumberId` (the provider's id):
   * its messages up to `readThrough` with blue ticks, "typing…" while `typing`.
   */
  phoneState(phoneNumberId: string, waId: string, lastOutboundAt: Date | null): { readThrough: Date | null; typing: boolean } {
    const state = this.receipts.get(`${phoneNumberId}:${waId.replace(/^\+/, '')}`);
    if (!state) return { readThrough: null, typing: false };
    const typing =
      state.typingUntil !== null && state.typingUntil > this.now() && !(lastOutboundAt && lastOutboundAt >= new Date(state.typingUntil.getTime() - TYPING_MS));
    return { readThrough: state.readThrough, typing };
  }

  /** The simulated phone: `from` writes to the sandbox number `phoneNumberId`. `at` backdates it (window tests). */
  async simulateInbound(input: { phoneNumberId: string; from: string; name?: string; message: InboundContent; at?: Date; replyTo?: string }) {
    const pn = await this.number(input.phoneNumberId);
    const from = input.from.replace(/^\+/, '');
    if (!WA_ID.test(from)) throw new Error(`simulated sender "${input.from}" is not an E.164 number`);
    const at = input.at ?? this.now();
    const id = newWamid();
    const { message } = input;
    let content: Record<string, unknown>;
    if ('media' in message) {
      const mediaId = numericId();
      // The phone's file is kept as the provider keeps an inbound medium, so a download returns it.
      if (message.bytes) {
        await this.options.db
          .insertInto('sandbox_media')
          .values({
            provider_media_id: mediaId,
            phone_number_id: pn.id,
            mime_type: message.media.mime_type,
            filename: message.media.filename ?? null,
            bytes: message.bytes,
          })
          .execute();
      }
      const sha256 = message.bytes ? createHash('sha256').update(message.bytes).digest('base64') : randomBytes(32).toString('base64');
      content = { [message.type]: { id: mediaId, sha256, ...message.media } };
    } else {
      content = { ...message };
      delete content.type;
    }
    const key = `${pn.provider_phone_number_id}:${from}`;
    this.lastInbound.set(key, Math.max(this.lastInbound.get(key) ?? 0, at.getTime()));
    const payload = envelope(pn, {
      contacts: [{ profile: { name: input.name ?? `+${from}` }, wa_id: from }],
      messages: [
        {
          from,
          id,
          timestamp: unix(at),
          type: message.type,
          ...(input.replyTo ? { context: { from: digits(pn.display_phone_number), id: input.replyTo } } : {}),
          ...content,
        },
      ],
    });
    await this.handOver(payload, INBOUND_ATTEMPTS);
    return { providerMessageId: id, payload };
  }

  async listPhoneNumbers(account: ProviderAccount): Promise<ProviderPhoneNumber[]> {
    const rows = await this.numbers().where('business_accounts.provider_waba_id', '=', account.wabaId).orderBy('phone_numbers.created_at').execute();
    return rows.map((n) => ({
      phoneNumberId: n.provider_phone_number_id,
      displayPhoneNumber: n.display_phone_number,
      verifiedName: n.verified_name,
      status: n.status,
      qualityRating: n.quality_rating,
      messagingLimitTier: 'TIER_1K',
    }));
  }

  async subscribeWebhooks(_account: ProviderAccount) {
    // Sandbox statuses and messages always go to our own inbound path.
    return { subscribed: true, fields: ['messages'] };
  }

  async createTemplate(account: ProviderAccount, input: TemplateCreateInput): Promise<TemplateCreated> {
    const status = this.options.templateReview === 'on-sync' ? 'PENDING' : sandboxTemplateStatus(input.name);
    return { id: templateId(account.wabaId, input.name, input.language), status, category: input.category };
  }

  /** Stateless: nothing is kept per template, so there is nothing to delete. */
  async deleteTemplate(_account: ProviderAccount, _template: { name: string; id: string | null }): Promise<void> {}

  /** Stateless: the status follows from the name, so it survives restarts without a table. */
  async getTemplateStatuses(account: ProviderAccount, templates: TemplateRef[]): Promise<TemplateStatusInfo[]> {
    return templates.map((t) => {
      const status = sandboxTemplateStatus(t.name);
      return {
        id: t.id ?? templateId(account.wabaId, t.name, t.language),
        name: t.name,
        language: t.language,
        status,
        category: t.category ?? 'UTILITY',
        rejectedReason: status === 'REJECTED' ? 'INVALID_FORMAT' : null,
        qualityScore: null,
      };
    });
  }

  async getBusinessProfile(number: ProviderNumber): Promise<BusinessProfile> {
    const pn = await this.number(number.phoneNumberId);
    return {
      about: `Sandbox number of ${pn.verified_name}`,
      address: null,
      description: 'A local sandbox number: messages never leave this server.',
      email: null,
      profilePictureUrl: null,
      websites: [],
      vertical: 'OTHER',
    };
  }

  async listCatalogs(account: ProviderAccount): Promise<ProviderCatalog[]> {
    return [{ id: catalogId(account.wabaId), name: 'Sandbox catalog' }];
  }

  async listProducts(account: ProviderAccount, id: string): Promise<ProviderProduct[]> {
    if (id !== catalogId(account.wabaId)) {
      throw new ProviderError({ code: 100, subcode: 33, httpStatus: 400, message: `Unsupported get request. Object with ID '${id}' does not exist.` });
    }
    return SAMPLE_PRODUCTS.map((p, i) => ({ ...p, id: `${id.slice(0, 10)}${String(i + 1).padStart(6, '0')}` }));
  }

  async getMarketingMessagesStatus(_account: ProviderAccount): Promise<MarketingOnboardingStatus> {
    return this.options.marketingOnboarding ?? 'ONBOARDED';
  }

  /** Keeps nothing but the id: the sandbox never delivers the bytes anywhere. */
  async uploadMedia(number: ProviderNumber, file: MediaFile): Promise<{ id: string }> {
    const pn = await this.number(number.phoneNumberId);
    if (file.bytes.length === 0)
      throw new ProviderError({ code: 131053, httpStatus: 400, message: '(#131053) Media upload error', details: 'The file is empty.' });
    const id = numericId();
    this.media.add(`${pn.provider_phone_number_id}:${id}`);
    return { id };
  }

  /** A handle of Meta's shape (`4::<base64 type>:<opaque>`); the sandbox reviews templates by name, not by sample. */
  async uploadSample(_account: ProviderAccount, file: MediaFile): Promise<{ handle: string }> {
    if (file.bytes.length === 0) throw new ProviderError({ code: 100, httpStatus: 400, message: '(#100) Invalid parameter', details: 'The file is empty.' });
    return { handle: `4::${Buffer.from(file.mimeType).toString('base64')}:${randomBytes(24).toString('base64url')}` };
  }

  /** What the simulated phone sent under `mediaId` to this number; the provider's 400 for an id it does not know. */
  async downloadMedia(number: ProviderNumber, mediaId: string, maxBytes: number): Promise<MediaDownload> {
    const pn = await this.number(number.phoneNumberId);
    const row = await this.options.db
      .selectFrom('sandbox_media')
      .select(['mime_type', 'bytes'])
      .where('provider_media_id', '=', mediaId)
      .where('phone_number_id', '=', pn.id)
      .executeTakeFirst();
    if (!row) throw new ProviderError({ code: 100, subcode: 33, httpStatus: 400, message: `Object with ID '${mediaId}' does not exist.` });
    if (row.bytes.length > maxBytes) throw mediaTooLarge(maxBytes);
    const bytes = row.bytes;
    return {
      mimeType: row.mime_type,
      size: bytes.length,
      body: (async function* () {
        yield bytes;
      })(),
    };
  }

  private async knowsMedia(pn: NumberRow, id: string): Promise<boolean> {
    if (this.media.has(`${pn.provider_phone_number_id}:${id}`)) return true;
    const row = await this.options.db
      .selectFrom('uploaded_media')
      .select('id')
      .where('phone_number_id', '=', pn.id)
      .where('provider_media_id', '=', id)
      .executeTakeFirst();
    return row !== undefined;
  }

  /** Checks the Flow JSON as the provider's validator would; the Flow itself needs no state here (its status is ours). */
  async createFlow(_account: ProviderAccount, input: FlowCreateInput): Promise<{ id: string }> {
    if (!input.name.trim() || input.categories.length === 0) {
      throw new ProviderError({ code: 100, httpStatus: 400, message: '(#100) Invalid parameter', details: 'A Flow needs a name and at least one category.' });
    }
    const errors = validateFlowJson(input.flowJson);
    if (errors.length) {
      const details = errors
        .slice(0, 5)
        .map((e) => `${e.path ? `${e.path}: ` : ''}${e.message}`)
        .join('; ');
      throw new ProviderError({ code: 139001, httpStatus: 400, message: 'The provider refused the Flow JSON.', details });
    }
    return { id: numericId() };
  }

  async publishFlow(_account: ProviderAccount, flowId: string): Promise<void> {
    if (!/^\d{1,32}$/.test(flowId))
      throw new ProviderError({ code: 100, subcode: 33, httpStatus: 400, message: `Unsupported post request. Object with ID '${flowId}' does not exist.` });
  }

  /** Resolves once every status already scheduled has been handed to `deliverWebhook`. */
  async idle(): Promise<void> {
    while (this.pending.size) await Promise.allSettled([...this.pending]);
  }

  /** Drops statuses not yet emitted (shutdown). */
  close(): void {
    this.closed = true;
    for (const t of this.timers) {
      clearTimeout(t.timer);
      t.resolve();
    }
    this.timers.clear();
  }

  private async emitStatuses(pn: NumberRow, waId: string, wamid: string, category: string, opaque?: string) {
    const status = (s: ProviderStatus['status'], extra: Partial<ProviderStatus> = {}): ProviderStatus => ({
      id: wamid,
      status: s,
      timestamp: unix(this.now()),
      recipient_id: waId,
      ...(opaque ? { biz_opaque_callback_data: opaque } : {}),
      ...extra,
    });
    const pricing = { billable: category !== 'service', pricing_model: 'PMP', category };
    const steps: [ProviderStatus['status'], number, Partial<ProviderStatus>][] = isUnreachableSandboxNumber(waId)
      ? [
          [
            'failed',
            this.delays.sent,
            {
              errors: [
                {
                  code: 131026,
                  title: 'Message undeliverable',
                  message: 'Message undeliverable',
                  error_data: { details: 'The recipient is not a WhatsApp user.' },
                },
              ],
            },
          ],
        ]
      : [
          ['sent', this.delays.sent, { pricing }],
          ['delivered', this.delays.delivered, { pricing }],
          ['read', this.delays.read, {}],
        ];
    for (const [name, delay, extra] of steps) {
      // Always yield first: the sender must get its wamid before the first status can arrive.
      await this.sleep(delay);
      if (this.closed) return;
      await this.handOver(envelope(pn, { statuses: [status(name, extra)] }));
    }
  }

  /**
   * Hands a payload to the inbound webhook, again after a backoff while it fails in a way that
   * can pass (as the provider retries its deliveries): a status is never dropped while the
   * sandbox runs, so a send always reaches its final status. Statuses still waiting when the
   * sandbox closes are dropped, as those not yet emitted are.
   */
  private async handOver(payload: ProviderWebhookPayload, attempts = Infinity): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.options.deliverWebhook(payload);
      } catch (error) {
        if (this.closed || attempt >= attempts || !retryableDelivery(error)) throw error;
        await this.sleep((this.options.retryDelayMs ?? retryDelay)(attempt));
        if (this.closed) throw error;
      }
    }
  }

  private track(work: Promise<void>) {
    const p = work.catch((error) => this.options.onDeliveryError?.(error)).finally(() => this.pending.delete(p));
    this.pending.add(p);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const entry = { timer: setTimeout(() => (this.timers.delete(entry), resolve()), ms), resolve };
      this.timers.add(entry);
    });
  }

  private async insideWindow(pn: NumberRow, waId: string): Promise<boolean> {
    let last = this.lastInbound.get(`${pn.provider_phone_number_id}:${waId}`) ?? 0;
    // What the inbound handler stored counts too, so the window survives a restart.
    const row = await this.options.db
      .selectFrom('messages')
      .innerJoin('contacts', 'contacts.id', 'messages.contact_id')
      .select((eb) => eb.fn.max('messages.created_at').as('at'))
      .where('messages.phone_number_id', '=', pn.id)
      .where('messages.direction', '=', 'inbound')
      .where('contacts.workspace_id', '=', pn.workspace_id)
      .where('contacts.phone', '=', `+${waId}`)
      .executeTakeFirst();
    if (row?.at) last = Math.max(last, new Date(row.at as Date | string).getTime());
    return this.now().getTime() - last < WINDOW_MS;
  }

  private numbers() {
    return this.options.db
      .selectFrom('phone_numbers')
      .innerJoin('business_accounts', 'business_accounts.id', 'phone_numbers.business_account_id')
      .selectAll('phone_numbers')
      .select('business_accounts.provider_waba_id')
      .where('business_accounts.kind', '=', 'sandbox');
  }

  private async number(phoneNumberId: string): Promise<NumberRow> {
    const row = await this.numbers().where('phone_numbers.provider_phone_number_id', '=', phoneNumberId).executeTakeFirst();
    if (!row) {
      throw new ProviderError({
        code: 100,
        subcode: 33,
        httpStatus: 400,
        message: `Unsupported post request. Object with ID '${phoneNumberId}' does not exist.`,
      });
    }
    return row;
  }
}

type NumberRow = {
  id: string;
  workspace_id: string;
  provider_phone_number_id: string;
  display_phone_number: string;
  verified_name: string;
  provider_waba_id: string;
};

function envelope(
  pn: NumberRow,
  value: Omit<ProviderWebhookPayload['entry'][0]['changes'][0]['value'], 'messaging_product' | 'metadata'>,
): ProviderWebhookPayload {
  return {
    object: 'whatsapp_business_account',
    entry: [
      {
        id: pn.provider_waba_id,
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: digits(pn.display_phone_number), phone_number_id: pn.provider_phone_number_id },
              ...value,
            },
          },
        ],
      },
    ],
  };
}

const digits = (s: string) => s.replace(/\D/g, '');

/** Every uploaded-media id a message refers to: its own medium, template headers and carousel cards. */
function mediaIdsIn(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) for (const v of value) mediaIdsIn(v, out);
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (['image', 'video', 'document', 'audio', 'sticker'].includes(k) && v && typeof v === 'object' && typeof (v as { id?: unknown }).id === 'string')
        out.push((v as { id: string }).id);
      else mediaIdsIn(v, out);
    }
  }
  return out;
}
const unix = (d: Date) => String(Math.floor(d.getTime() / 1000));
/** Meta's ids are numeric strings of about 15 digits. */
const numericId = () => `1${Array.from({ length: 14 }, () => randomInt(0, 10)).join('')}`;
const newWamid = () => `wamid.${randomBytes(30).toString('base64')}`;
const hashDigits = (s: string) => (BigInt(`0x${createHash('sha256').update(s).digest('hex').slice(0, 15)}`) % 10n ** 14n).toString().padStart(14, '0');
const templateId = (wabaId: string, name: string, language: string) => `9${hashDigits(`${wabaId}/${name}/${language}`)}`;
const catalogId = (wabaId: string) => `8${hashDigits(`catalog/${wabaId}`)}`;

const SAMPLE_PRODUCTS: Omit<ProviderProduct, 'id'>[] = [
  {
    retailerId: 'SKU-TEE-01',
    name: 'Organic cotton T-shirt',
    description: 'Soft, breathable, in five colours.',
    price: 2500,
    salePrice: 1999,
    currency: 'EUR',
    availability: 'in_stock',
    imageUrl: 'https://example.com/img/tee.jpg',
    url: 'https://example.com/p/tee',
  },
  {
    retailerId: 'SKU-MUG-02',
    name: 'Ceramic mug',
    description: '350 ml, dishwasher safe.',
    price: 1200,
    salePrice: null,
    currency: 'EUR',
    availability: 'in_stock',
    imageUrl: 'https://example.com/img/mug.jpg',
    url: 'https://example.com/p/mug',
  },
  {
    retailerId: 'SKU-BAG-03',
    name: 'Canvas tote bag',
    description: null,
    price: 1800,
    salePrice: null,
    currency: 'EUR',
    availability: 'out_of_stock',
    imageUrl: null,
    url: null,
  },
  {
    retailerId: 'SKU-CAP-04',
    name: 'Baseball cap',
    description: 'One size.',
    price: 1500,
    salePrice: null,
    currency: 'EUR',
    availability: 'preorder',
    imageUrl: 'https://example.com/img/cap.jpg',
    url: 'https://example.com/p/cap',
  },
];
