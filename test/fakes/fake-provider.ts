// A fake of Meta's Cloud API (the Graph endpoints our adapter calls) on 127.0.0.1, for adapter,
// API and benchmark tests. It records every request and can be told to fail the way Meta fails:
// rate limits with Retry-After, the 24-hour window, invalid numbers, 5xx, bad tokens, or hanging.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';

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

export class FakeProvider {
  readonly requests: RecordedRequest[] = [];
  /** How many send calls were accepted (counted even when `record` is off). */
  sent = 0;
  baseUrl = '';
  marketingStatus = 'ONBOARDED';
  readonly templates: FakeTemplate[] = [];
  readonly phoneNumbers = [
    { id: FAKE_PHONE_NUMBER_ID, display_phone_number: '+1 555-010-0100', verified_name: 'Acme Shop', status: 'CONNECTED', quality_rating: 'GREEN', messaging_limit_tier: 'TIER_1K' },
    { id: '106540352242923', display_phone_number: '+44 7700 900123', verified_name: 'Acme UK', status: 'CONNECTED', quality_rating: 'YELLOW', messaging_limit_tier: 'TIER_250' },
  ];
  readonly products = [
    { id: '5001', retailer_id: 'SKU-1', name: 'Tee', description: 'Cotton', price: '€1,234.50', sale_price: '', currency: 'EUR', availability: 'in stock', image_url: 'https://example.com/tee.jpg', url: 'https://example.com/tee' },
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
  }

  private async handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://fake');
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    let body: any = undefined;
    try {
      body = raw ? JSON.parse(raw) : undefined;
    } catch {
      return graphError(res, 400, 100, 'Invalid JSON body');
    }
    const path = url.pathname.replace(/^\/v\d+\.\d+/, '');
    const method = req.method ?? 'GET';
    if (this.record) this.requests.push({ method, path, query: Object.fromEntries(url.searchParams), headers: req.headers, body });

    const rule = this.rules.find((r) => r.remaining > 0 && (!r.method || r.method === method) && (!r.path || r.path.test(path)));
    if (rule) {
      rule.remaining--;
      return this.failWith(res, rule);
    }
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!token || !this.tokens.has(token)) return graphError(res, 401, 190, 'Invalid OAuth access token - Cannot parse access token', 'OAuthException');
    return this.route(res, method, path.split('/').filter(Boolean), url.searchParams, body);
  }

  private route(res: ServerResponse, method: string, parts: string[], query: URLSearchParams, body: any) {
    const [id, edge] = parts;
    if (method === 'POST' && (edge === 'messages' || edge === 'marketing_messages')) return this.send(res, id, edge, body);
    if (method === 'GET' && edge === 'phone_numbers' && id === FAKE_WABA_ID) return this.page(res, this.phoneNumbers, query);
    if (method === 'POST' && edge === 'subscribed_apps' && id === FAKE_WABA_ID) return json(res, 200, { success: true });
    if (edge === 'message_templates' && id === FAKE_WABA_ID) {
      if (method === 'GET') return this.page(res, this.templates, query);
      if (this.templates.some((t) => t.name === body?.name && t.language === body?.language)) {
        return graphError(res, 400, 100, 'Invalid parameter', 'OAuthException', 'Message template already exists with this name and language');
      }
      const t: FakeTemplate = { id: String(9_000_000_000_000 + this.templates.length), name: body?.name, language: body?.language, category: body?.category, status: 'PENDING', components: body?.components };
      this.templates.push(t);
      return json(res, 200, { id: t.id, status: t.status, category: t.category });
    }
    if (method === 'GET' && edge === 'whatsapp_business_profile' && id === FAKE_PHONE_NUMBER_ID) {
      return json(res, 200, { data: [{ about: 'Hello from Acme', address: '1 Main St', description: 'We sell things', email: 'shop@acme.example', websites: ['https://acme.example'], vertical: 'RETAIL', messaging_product: 'whatsapp' }] });
    }
    if (method === 'GET' && edge === 'product_catalogs' && id === FAKE_WABA_ID) return json(res, 200, { data: [{ id: FAKE_CATALOG_ID, name: 'Acme catalog' }] });
    if (method === 'GET' && edge === 'products' && id === FAKE_CATALOG_ID) return this.page(res, this.products, query);
    if (method === 'GET' && !edge && id === FAKE_WABA_ID) return json(res, 200, { id, marketing_messages_onboarding_status: this.marketingStatus });
    return graphError(res, 400, 100, `Unsupported ${method.toLowerCase()} request. Object with ID '${id}' does not exist`, 'GraphMethodException');
  }

  private send(res: ServerResponse, phoneNumberId: string, edge: string, body: any) {
    if (!this.phoneNumbers.some((n) => n.id === phoneNumberId)) return graphError(res, 400, 100, `Object with ID '${phoneNumberId}' does not exist`);
    if (body?.messaging_product !== 'whatsapp' || typeof body?.type !== 'string' || !(body.type in body)) {
      return graphError(res, 400, 100, '(#100) Invalid parameter', 'OAuthException', 'messaging_product, type and the object named by type are required');
    }
    if (edge === 'marketing_messages' && body.type !== 'template') return graphError(res, 400, 100, '(#100) Invalid parameter', 'OAuthException', 'Only template messages');
    const to = String(body.to ?? '');
    if (!/^\+?[1-9]\d{7,14}$/.test(to)) return graphError(res, 400, 131009, '(#131009) Parameter value is not valid', 'OAuthException', 'Invalid recipient');
    this.sent++;
    const waId = to.replace(/^\+/, '');
    return json(res, 200, {
      messaging_product: 'whatsapp',
      contacts: [{ input: to, wa_id: waId }],
      messages: [{ id: `wamid.${randomBytes(30).toString('base64')}`, ...(body.type === 'template' ? { message_status: 'accepted' } : {}) }],
    });
  }

  private page(res: ServerResponse, rows: object[], query: URLSearchParams) {
    const size = Number(query.get('limit') ?? this.pageSize);
    const start = Number(query.get('after') ?? 0);
    const end = start + size;
    const more = end < rows.length;
    return json(res, 200, { data: rows.slice(start, end), paging: { cursors: { before: String(start), after: String(end) }, ...(more ? { next: `https://graph.example/next?after=${end}` } : {}) } });
  }

  private failWith(res: ServerResponse, rule: FailureRule) {
    const f = rule.failure;
    if (f === 'hang') return; // never answers; the client's timeout must fire
    if (f === 'rate-limit') {
      res.setHeader('retry-after', String(rule.retryAfterSec));
      return graphError(res, 429, 130429, '(#130429) Rate limit hit', 'OAuthException', 'Cloud API message throughput has been reached.');
    }
    if (f === 'outside-window') {
      return graphError(res, 400, 131047, '(#131047) Re-engagement message', 'OAuthException', 'Message failed to send because more than 24 hours have passed since the customer last replied to this number.');
    }
    if (f === 'invalid-number') return graphError(res, 400, 131026, '(#131026) Message undeliverable', 'OAuthException', 'The recipient is not a WhatsApp user.');
    if (f === 'auth') return graphError(res, 401, 190, 'Error validating access token: Session has expired', 'OAuthException');
    if (f === 'server-error') return graphError(res, 500, 2, 'Service temporarily unavailable', 'OAuthException', undefined, true);
    for (const [k, v] of Object.entries(f.headers ?? {})) res.setHeader(k, v);
    return f.body === undefined ? res.writeHead(f.status).end() : json(res, f.status, f.body);
  }
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
