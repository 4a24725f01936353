// A fake of Meta's Cloud API (the Graph endpoints our adapter calls) on 127.0.0.1, for adapter,
// API and benchmark tests. It records every request and can be told to fail the way Meta fails:
// rate limits with Retry-After, the 24-hour window, invalid numbers, 5xx, bad tokens, or hanging.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { validateFlowJson } from '#server/providers/flow-json-check.js';

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: IncomingMessage['headers'];
  body: any;
}

export type Failure =
  | 'rate-limit'
  | 'outside-window'
  | 'invalid-number'
  | 'server-error'
  | 'auth'
  | 'hang'
  | 'media-upload-error'
  | { status: number; body?: unknown; headers?: Record<string, string> };

interface FailureRule {
  failure: Failure;
  method?: string;
  path?: RegExp;
  remaining: number;
  retryAfterSec: number;
}

export interface FakeTemplate {
  id: string;
  name: string;
  language: string;
  category: string;
  status: string;
  rejected_reason?: string;
  components?: unknown;
}

export interface FakeProviderOptions {
  /** Tokens the fake accepts; anything else answers 401 with code 190. */
  tokens?: string[];
  /** Page size of list endpoints when the request gives no `limit`: small, so paging is exercised. */
  pageSize?: number;
  /** Keep request bodies and headers (off for benchmarks with 100,000 sends). */
  record?: boolean;
}

export const FAKE_WABA_ID = '102290129340398';
export const FAKE_PHONE_NUMBER_ID = '106540352242922';
export const FAKE_CATALOG_ID = '771002003004005';
export const FAKE_TOKEN = 'EAAG-fake-system-user-token-0123456789';
export const FAKE_APP_ID = '1234567890123456';

export class FakeProvider {
  readonly requests: RecordedRequest[] = [];
  /** How many send calls were accepted (counted even when `record` is off). */
  sent = 0;
  /** When each accepted send arrived (Date.now(), whole ms as maxInWindow counts them), in order. */
  readonly sendTimes: number[] = [];
  baseUrl = '';
  marketingStatus = 'ONBOARDED';
  readonly templates: FakeTemplate[] = [];
  /** Media uploaded with `POST /{phone-number-id}/media`, by the id answered. */
  readonly uploads = new Map<string, FakeUpload>();
  /** Resumable upload sessions and the sample handles they answered. */
  readonly sessions = new Map<string, { length: number; type: string }>();
  readonly samples = new Map<string, { type: string; bytes: Buffer }>();
  /** Media customers sent, by media id: `GET /{media-id}` answers a download URL on this server. */
  readonly inboundMedia = new Map<string, { type: string; bytes: Buffer }>();
  /** WhatsApp Flows created with `POST /{waba-id}/flows`, by id. */
  readonly flows = new Map<string, FakeFlow>();
  readonly phoneNumbers = [
    {
      id: FAKE_PHONE_NUMBER_ID,
      display_phone_number: '+1 555-010-0100',
      verified_name: 'Acme Shop',
      status: 'CONNECTED',
      quality_rating: 'GREEN',
      messaging_limit_tier: 'TIER_1K',
    },
    {
      id: '106540352242923',
      display_phone_number: '+44 7700 900123',
      verified_name: 'Acme UK',
      status: 'CONNECTED',
      quality_rating: 'YELLOW',
      messaging_limit_tier: 'TIER_250',
    },
  ];
  readonly products = [
    {
      id: '5001',
      retailer_id: 'SKU-1',
      name: 'Tee',
      description: 'Cotton',
      price: '€1,234.50',
      sale_price: '',
      currency: 'EUR',
      availability: 'in stock',
      image_url: 'https://example.com/tee.jpg',
      url: 'https://example.com/tee',
    },
    { id: '5002', retailer_id: 'SKU-2', name: 'Mug', price: '¥1,200', currency: 'JPY', availability: 'out of stock' },
    { id: '5003', retailer_id: 'SKU-3', name: 'Cap', price: '15.00 USD', currency: 'USD', availability: 'preorder' },
  ];
  private readonly rules: FailureRule[] = [];
  private readonly tokens: Set<string>;
  private readonly pageSize: number;
  private readonly record: boolean;
  private readonly server = createServer((req, res) => void this.handle(req, res));

  constructor(options: FakeProviderOptions = {}) {
    this.tokens = new Set(options.tokens ?? [FAKE_TOKEN]);
    this.pageSize = options.pageSize ?? 1;
    this.record = options.record ?? true;
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.baseUrl = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v23.0`;
    return this;
  }

  async stop(): Promise<void> {
    // Hanging requests hold their sockets open; end them so close() can finish.
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Fail the next `times` matching requests (default 1). */
  fail(failure: Failure, match: { method?: string; path?: RegExp; times?: number; retryAfterSec?: number } = {}): void {
    this.rules.push({ failure, method: match.method, path: match.path, remaining: match.times ?? 1, retryAfterSec: match.retryAfterSec ?? 30 });
  }

  reset(): void {
    this.requests.length = 0;
    this.rules.length = 0;
    this.sent = 0;
    this.sendTimes.length = 0;
  }

  private async handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://fake');
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    let body: any;
    if (/^application\/octet-stream/i.test(req.headers['content-type'] ?? '')) {
      body = Buffer.concat(chunks); // a resumable upload's bytes
    } else if (/^multipart\/form-data/i.test(req.headers['content-type'] ?? '')) {
      // Media uploads: the fields as strings, the file as its name, type, size and bytes.
      try {
        body = await multipartBody(Buffer.concat(chunks), req.headers['content-type']!);
      } catch {
        return graphError(res, 400, 100, 'Invalid multipart body');
      }
    } else {
      try {
        body = raw ? JSON.parse(raw) : undefined;
      } catch {
        return graphError(res, 400, 100, 'Invalid JSON body');
      }
    }
    const path = url.pathname.replace(/^\/v\d+\.\d+/, '');
    const method = req.method ?? 'GET';
    if (this.record) this.requests.push({ method, path, query: Object.fromEntries(url.searchParams), headers: req.headers, body });

    const rule = this.rules.find((r) => r.remaining > 0 && (!r.method || r.method === method) && (!r.path || r.path.test(path)));
    if (rule) {
      rule.remaining--;
      return this.failWith(res, rule);
    }
    // The resumable upload's second step authenticates with `OAuth <token>`, everything else with Bearer.
    const token = /^(?:Bearer|OAuth) (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!token || !this.tokens.has(token)) return graphError(res, 401, 190, 'Invalid OAuth access token - Cannot parse access token', 'OAuthException');
    return this.route(res, method, path.split('/').filter(Boolean), url.searchParams, body);
  }

  private route(res: ServerResponse, method: string, parts: string[], query: URLSearchParams, body: any) {
    const [id, edge] = parts;
    if (method === 'POST' && (edge === 'messages' || edge === 'marketing_messages')) return this.send(res, id, edge, body);
    if (method === 'POST' && edge === 'media') return this.upload(res, id, body);
    if (method === 'POST' && edge === 'uploads' && id === FAKE_APP_ID) {
      const length = Number(query.get('file_length'));
      if (!query.get('file_name') || !query.get('file_type') || !Number.isInteger(length) || length <= 0)
        return graphError(res, 400, 100, '(#100) Invalid parameter', 'OAuthException', 'file_name, file_length and file_type are required');
      const session = `upload:${randomBytes(12).toString('base64url')}`;
      this.sessions.set(session, { length, type: query.get('file_type')! });
      return json(res, 200, { id: `${session}?sig=${randomBytes(6).toString('hex')}` });
    }
    if (method === 'POST' && id?.startsWith('upload:') && !edge) {
      const session = this.sessions.get(id);
      if (!session || !Buffer.isBuffer(body) || body.length !== session.length)
        return graphError(res, 400, 100, '(#100) Invalid parameter', 'OAuthException', 'unknown upload session or wrong length');
      const h = `4::${Buffer.from(session.type).toString('base64')}:${randomBytes(16).toString('base64url')}`;
      this.samples.set(h, { type: session.type, bytes: body });
      return json(res, 200, { h });
    }
    if (method === 'GET' && !edge && this.inboundMedia.has(id!)) {
      const m = this.inboundMedia.get(id!)!;
      const url = `${new URL(this.baseUrl).origin}/whatsapp_business/attachments/?mid=${id}&ext=1744344496&hash=ATuA`;
      return json(res, 200, { messaging_product: 'whatsapp', url, mime_type: m.type, sha256: 'x', file_size: m.bytes.length, id });
    }
    if (method === 'GET' && id === 'whatsapp_business' && edge === 'attachments') {
      const m = this.inboundMedia.get(query.get('mid') ?? '');
      if (!m) return graphError(res, 404, 100, 'Media not found');
      return res.writeHead(200, { 'content-type': m.type, 'content-length': String(m.bytes.length) }).end(m.bytes);
    }
    if (method === 'POST' && edge === 'flows' && id === FAKE_WABA_ID) return this.createFlow(res, body);
    if (this.flows.has(id) && ((method === 'POST' && (edge === 'assets' || edge === 'publish')) || (method === 'DELETE' && !edge)))
      return this.flowCall(res, method, id, edge, body);
    if (method === 'GET' && edge === 'phone_numbers' && id === FAKE_WABA_ID) return this.page(res, this.phoneNumbers, query);
    if (method === 'POST' && edge === 'subscribed_apps' && id === FAKE_WABA_ID) return json(res, 200, { success: true });
    if (edge === 'message_templates' && id === FAKE_WABA_ID) {
      if (method === 'GET') return this.page(res, this.templates, query);
      if (method === 'DELETE') {
        const name = query.get('name');
        const hsmId = query.get('hsm_id');
        const doomed = this.templates.filter((t) => t.name === name && (!hsmId || t.id === hsmId));
        if (!name || !doomed.length) return graphError(res, 400, 100, '(#100) Invalid parameter', 'OAuthException', 'Message template not found');
        for (const t of doomed) this.templates.splice(this.templates.indexOf(t), 1);
        return json(res, 200, { success: true });
      }
      if (this.templates.some((t) => t.name === body?.name && t.language === body?.language)) {
        return graphError(res, 400, 100, 'Invalid parameter', 'OAuthException', 'Message template already exists with this name and language');
      }
      const t: FakeTemplate = {
        id: String(9_000_000_000_000 + this.templates.length),
        name: body?.name,
        language: body?.language,
        category: body?.category,
        status: 'PENDING',
        components: body?.components,
      };
      this.templates.push(t);
      return json(res, 200, { id: t.id, status: t.status, category: t.category });
    }
    if (method === 'GET' && edge === 'whatsapp_business_profile' && id === FAKE_PHONE_NUMBER_ID) {
      return json(res, 200, {
        data: [
          {
            about: 'Hello from Acme',
            address: '1 Main St',
            description: 'We sell things',
            email: 'shop@acme.example',
            websites: ['https://acme.example'],
            vertical: 'RETAIL',
            messaging_product: 'whatsapp',
          },
        ],
      });
    }
    if (method === 'GET' && edge === 'product_catalogs' && id === FAKE_WABA_ID)
      return json(res, 200, { data: [{ id: FAKE_CATALOG_ID, name: 'Acme catalog' }] });
    if (method === 'GET' && edge === 'products' && id === FAKE_CATALOG_ID) return this.page(res, this.products, query);
    if (method === 'GET' && !edge && id === FAKE_WABA_ID) return json(res, 200, { id, marketing_messages_onboarding_status: this.marketingStatus });
    return graphError(res, 400, 100, `Unsupported ${method.toLowerCase()} request. Object with ID '${id}' does not exist`, 'GraphMethodException');
  }

  private send(res: ServerResponse, phoneNumberId: string, edge: string, body: any) {
    if (!this.phoneNumbers.some((n) => n.id === phoneNumberId)) return graphError(res, 400, 100, `Object with ID '${phoneNumberId}' does not exist`);
    // A read receipt (and typing indicator), as Meta takes it: no `to`, no `type`; answers success.
    if (edge === 'messages' && body?.status === 'read') {
      const keys = Object.keys(body).sort().join(',');
      const typing = body.typing_indicator;
      if (
        body.messaging_product !== 'whatsapp' ||
        typeof body.message_id !== 'string' ||
        !body.message_id.startsWith('wamid.') ||
        (typing !== undefined && (typeof typing !== 'object' || typing?.type !== 'text' || Object.keys(typing).length !== 1)) ||
        !['message_id,messaging_product,status', 'message_id,messaging_product,status,typing_indicator'].includes(keys)
      )
        return graphError(res, 400, 100, '(#100) Invalid parameter', 'OAuthException', 'messaging_product, status read and message_id are required');
      return json(res, 200, { success: true });
    }
    if (body?.messaging_product !== 'whatsapp' || typeof body?.type !== 'string' || !(body.type in body)) {
      return graphError(res, 400, 100, '(#100) Invalid parameter', 'OAuthException', 'messaging_product, type and the object named by type are required');
    }
    if (edge === 'marketing_messages' && body.type !== 'template')
      return graphError(res, 400, 100, '(#100) Invalid parameter', 'OAuthException', 'Only template messages');
    const to = String(body.to ?? '');
    if (!/^\+?[1-9]\d{7,14}$/.test(to)) return graphError(res, 400, 131009, '(#131009) Parameter value is not valid', 'OAuthException', 'Invalid recipient');
    this.sent++;
    this.sendTimes.push(Date.now());
    const waId = to.replace(/^\+/, '');
    return json(res, 200, {
      messaging_product: 'whatsapp',
      contacts: [{ input: to, wa_id: waId }],
      messages: [{ id: `wamid.${randomBytes(30).toString('base64')}`, ...(body.type === 'template' ? { message_status: 'accepted' } : {}) }],
    });
  }

  private createFlow(res: ServerResponse, body: any) {
    if (typeof body?.name !== 'string' || !body.name || !Array.isArray(body.categories) || body.categories.length === 0) {
      return graphError(res, 400, 100, '(#100) Invalid parameter', 'OAuthException', 'name and categories are required');
    }
    if ([...this.flows.values()].some((f) => f.name === body.name))
      return graphError(res, 400, 100, '(#100) Invalid parameter', 'OAuthException', 'A Flow with this name already exists');
    const id = String(1_187_364_459_302_700 + this.flows.size);
    this.flows.set(id, { id, name: body.name, categories: body.categories, status: 'DRAFT', flowJson: null });
    return json(res, 200, { id });
  }

  private flowCall(res: ServerResponse, method: string, id: string, edge: string | undefined, body: any) {
    const flow = this.flows.get(id)!;
    if (method === 'DELETE') {
      if (flow.status !== 'DRAFT') return graphError(res, 400, 139002, 'Only draft Flows can be deleted');
      this.flows.delete(id);
      return json(res, 200, { success: true });
    }
    if (edge === 'assets') {
      const file = body?.file as FakeUpload | undefined;
      if (body?.asset_type !== 'FLOW_JSON' || !file || typeof file !== 'object')
        return graphError(res, 400, 100, '(#100) Invalid parameter', 'OAuthException', 'file and asset_type FLOW_JSON are required');
      if (flow.status !== 'DRAFT') return graphError(res, 400, 139002, 'A published Flow cannot be changed');
      flow.flowJson = file.bytes.toString('utf8');
      return json(res, 200, { success: true, validation_errors: validateFlowJson(flow.flowJson) });
    }
    if (flow.status !== 'DRAFT') return graphError(res, 400, 139002, 'Publishing failed', 'OAuthException', 'The Flow is already published.');
    if (!flow.flowJson || validateFlowJson(flow.flowJson).length)
      return graphError(res, 400, 139001, 'Publishing failed', 'OAuthException', 'The Flow JSON has validation errors.');
    flow.status = 'PUBLISHED';
    return json(res, 200, { success: true });
  }

  private upload(res: ServerResponse, phoneNumberId: string, body: any) {
    if (!this.phoneNumbers.some((n) => n.id === phoneNumberId)) return graphError(res, 400, 100, `Object with ID '${phoneNumberId}' does not exist`);
    const file = body?.file as FakeUpload | undefined;
    if (body?.messaging_product !== 'whatsapp' || !file || typeof file !== 'object' || typeof body.type !== 'string') {
      return graphError(res, 400, 100, '(#100) Invalid parameter', 'OAuthException', 'messaging_product, type and file are required');
    }
    const id = String(1_000_000_000_000_000 + this.uploads.size);
    this.uploads.set(id, { ...file, phoneNumberId });
    return json(res, 200, { id });
  }

  private page(res: ServerResponse, rows: object[], query: URLSearchParams) {
    const size = Number(query.get('limit') ?? this.pageSize);
    const start = Number(query.get('after') ?? 0);
    const end = start + size;
    const more = end < rows.length;
    return json(res, 200, {
      data: rows.slice(start, end),
      paging: { cursors: { before: String(start), after: String(end) }, ...(more ? { next: `https://graph.example/next?after=${end}` } : {}) },
    });
  }

  private failWith(res: ServerResponse, rule: FailureRule) {
    const f = rule.failure;
    if (f === 'hang') return; // never answers; the client's timeout must fire
    if (f === 'rate-limit') {
      res.setHeader('retry-after', String(rule.retryAfterSec));
      return graphError(res, 429, 130429, '(#130429) Rate limit hit', 'OAuthException', 'Cloud API message throughput has been reached.');
    }
    if (f === 'outside-window') {
      return graphError(
        res,
        400,
        131047,
        '(#131047) Re-engagement message',
        'OAuthException',
        'Message failed to send because more than 24 hours have passed since the customer last replied to this number.',
      );
    }
    if (f === 'invalid-number')
      return graphError(res, 400, 131026, '(#131026) Message undeliverable', 'OAuthException', 'The recipient is not a WhatsApp user.');
    if (f === 'media-upload-error')
      return graphError(res, 400, 131053, '(#131053) Media upload error', 'OAuthException', 'Unable to upload the media used in the message.');
    if (f === 'auth') return graphError(res, 401, 190, 'Error validating access token: Session has expired', 'OAuthException');
    if (f === 'server-error') return graphError(res, 500, 2, 'Service temporarily unavailable', 'OAuthException', undefined, true);
    for (const [k, v] of Object.entries(f.headers ?? {})) res.setHeader(k, v);
    return f.body === undefined ? res.writeHead(f.status).end() : json(res, f.status, f.body);
  }
}

export interface FakeFlow {
  id: string;
  name: string;
  categories: string[];
  status: 'DRAFT' | 'PUBLISHED';
  flowJson: string | null;
}

export interface FakeUpload {
  filename: string;
  type: string;
  size: number;
  bytes: Buffer;
  phoneNumberId?: string;
}

async function multipartBody(raw: Buffer, contentType: string): Promise<Record<string, unknown>> {
  const form = await new Response(raw as Uint8Array<ArrayBuffer>, { headers: { 'content-type': contentType } }).formData();
  const out: Record<string, unknown> = {};
  for (const [key, value] of form.entries()) {
    out[key] = typeof value === 'string' ? value : { filename: value.name, type: value.type, size: value.size, bytes: Buffer.from(await value.arrayBuffer()) };
  }
  return out;
}

function json(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

function graphError(res: ServerResponse, status: number, code: number, message: string, type = 'OAuthException', details?: string, transient?: boolean) {
  json(res, status, {
    error: {
      message,
      type,
      code,
      ...(details ? { error_data: { messaging_product: 'whatsapp', details } } : {}),
      ...(transient ? { is_transient: true } : {}),
      fbtrace_id: `A${randomBytes(8).toString('hex')}`,
    },
  });
}
