// Real answers of every list and get operation of the four APIs, recorded from the contract
// suite's server in a workspace of their own, validated against the 3.0 and the 3.1 document by
// independent validators (./dialects.ts). A 3.0 document whose nullable references refuse null
// (`allOf: [$ref]` beside `nullable: true`) fails here on the first message or chat.
// The workspace is filled by the operations' own success examples (every POST without a path
// parameter), then each GET without a path parameter is called, then each GET with one, its ids
// taken from the answers before it.
import { describe, expect, inject, it } from 'vitest';
import { API_NAMES } from '#server/contract.js';
import { type ContractCase, loadCases, loadDocument, type Parameter } from './cases.js';
import { type ResponseValidator, responseValidator } from './dialects.js';
import { type Answer, send, type Target } from './http.js';
import { seedConnect } from './seed-connect.js';
import { seedMessaging } from './seed-messaging.js';

interface Recorded {
  api: string;
  operationId: string;
  url: string;
  answer: Answer;
}

/** GET operations that cannot answer 2xx in a fresh workspace, and why. */
const NO_SUCCESS_HERE: Record<string, string> = {
  getGoogleConnectUrl: 'the suite runs the server without a Google OAuth client (422)',
  listCatalogProducts: 'the sandbox account has no product catalogue',
  getChatbot: "createChatbot's example hands off to an agent this workspace does not have",
  getRegisteredClient: 'RFC 7592 reads need the registration access token shown once at registration, which the seeding does not keep',
  getOidcUserInfo: 'an OIDC access token comes only from a code after a LOGIN chat message (test/unit/login/oidc.test.ts reads it)',
};

// The server itself: through the validating proxies (`test:proxy`) the seeding's pages and
// cross-API calls would be routes no one API's proxy knows; that run checks the suites' cases.
const server = process.env.CONTRACT_TARGETS?.includes('proxy') ? undefined : inject('contractTargets').find((t) => t.name === 'server');

describe.skipIf(!server)('recorded answers of every list and get operation', () => {
  let recorded: Recorded[] = [];

  it('records them from the server', { timeout: 120_000 }, async () => {
    recorded = await record(server!.urls);
    const gets = API_NAMES.flatMap((api) => jsonGets(api).map((g) => g.operationId));
    expect(gets.filter((id) => !recorded.some((r) => r.operationId === id))).toEqual([]);
    const failed = recorded.filter((r) => r.answer.status >= 300 && !(r.operationId in NO_SUCCESS_HERE));
    expect(failed.map((r) => `${r.operationId} ${r.url} → ${r.answer.status} ${r.answer.text.slice(0, 200)}`)).toEqual([]);
  });

  for (const dialect of ['3.0', '3.1'] as const) {
    it(`validates every recorded answer against the ${dialect} documents: 0 errors`, () => {
      expect(recorded.length).toBeGreaterThan(0);
      const validators = new Map<string, ResponseValidator>(API_NAMES.map((api) => [api, responseValidator(api, dialect)]));
      const errors = recorded.flatMap((r) =>
        validators.get(r.api)!(r.operationId, r.answer.status, r.answer.contentType, r.answer.body).map((e) => `${r.operationId} ${r.answer.status}: ${e}`),
      );
      expect(errors).toEqual([]);
    });
  }

  it('declares every rate-limit header the server sent on the answer that carried it', () => {
    const sent = recorded.flatMap((r) =>
      Object.keys(r.answer.headers)
        .filter((h) => /^(ratelimit-|retry-after$)/.test(h))
        .map((h) => ({ r, h })),
    );
    expect(sent.length).toBeGreaterThan(recorded.length); // three per limited answer
    const documents = new Map(API_NAMES.map((api) => [api as string, loadDocument(api)]));
    const undeclared = sent.filter(({ r, h }) => {
      const op = Object.values<any>(documents.get(r.api).paths).find((item) => item.get?.operationId === r.operationId)?.get;
      const declared = Object.keys(op?.responses?.[String(r.answer.status)]?.headers ?? {}).map((name) => name.toLowerCase());
      return !declared.includes(h);
    });
    expect(undeclared.map(({ r, h }) => `${r.operationId} ${r.answer.status} ${h}`)).toEqual([]);
  });
});

/** The GET operations of an API whose success answer is JSON (not a page, a stream or text). */
function jsonGets(api: string): { operationId: string; path: string; params: Parameter[]; security: ContractCase['security'] }[] {
  const doc = loadDocument(api);
  return Object.entries<any>(doc.paths)
    .filter(([, item]) => item.get && Object.entries<any>(item.get.responses).some(([s, r]) => Number(s) < 300 && r.content?.['application/json']))
    .map(([path, item]) => ({
      operationId: item.get.operationId,
      path,
      params: [...(item.parameters ?? []), ...(item.get.parameters ?? [])].map((p: any) => (p.$ref ? resolve(doc, p.$ref) : p)),
      security: item.get.security ?? doc.security ?? [],
    }));
}

async function record(urls: Record<string, string>): Promise<Recorded[]> {
  const credentials = await workspace(urls.account!);
  const targets: Record<string, Target> = {};
  const targetFor = (api: string) => (targets[api] ??= { name: 'server', baseUrl: (a) => urls[a]!, credentials });
  const ids = new Ids();
  const out: Recorded[] = [];
  const ops = API_NAMES.flatMap((api) => jsonGets(api).map((g) => ({ api, ...g })));
  const tests = API_NAMES.flatMap((api) => loadCases(api)).filter((c) => c.method === 'POST' && c.path.endsWith('/test') && c.status === 202);
  const get = async (op: (typeof ops)[number]) => {
    const paramValues: Record<string, unknown> = {};
    for (const p of op.params.filter((p) => p.in === 'path' || p.required)) paramValues[`${p.in}:${p.name}`] = valueFor(op.path, p, out, ids);
    const c: ContractCase = { ...op, method: 'GET', example: 'recorded', paramValues };
    // A delivery log is read after a test event to the same endpoint, whose outbox row is
    // written before the 202: the reads of one delivery then have an id, on either store.
    const test = tests.find((t) => t.api === op.api && t.path === op.path.replace(/\/deliveries$/, '/test'));
    if (test) expect((await send({ ...test, paramValues }, targetFor(op.api))).status).toBe(202);
    const answer = await send(c, targetFor(op.api));
    ids.harvest(answer);
    out.push({ api: op.api, operationId: op.operationId, url: op.path.replace(/\{([^}]+)\}/g, (_, n) => String(paramValues[`path:${n}`])), answer });
  };
  // What the seed made (the sandbox account and its number), for the examples to name.
  for (const op of ops.filter((o) => !o.path.includes('{') && !o.params.some((p) => p.required))) await get(op);
  // Fill the workspace: every creating example (a POST without a path parameter), its example
  // ids and number replaced by this workspace's; those refused are tried once more, after the
  // rows they name (templates, agents) were made.
  const creators = API_NAMES.flatMap((api) => loadCases(api)).filter((c) => c.method === 'POST' && !c.path.includes('{') && (c.status ?? 200) < 300);
  for (const round of [1, 2]) {
    for (const c of creators.splice(0)) {
      const answer = await send({ ...c, body: ids.substitute(c.body) }, targetFor(c.api));
      ids.harvest(answer);
      if (answer.status >= 300 && round === 1) creators.push(c);
      const loginKey = (answer.body as { api_key?: string } | undefined)?.api_key;
      if (c.operationId === 'createLoginApp' && loginKey) targets.login = { ...targetFor('login'), credentials: { ...credentials, ApiKeyHeader: loginKey } };
    }
  }
  // Then every GET: fewer path parameters first, so a list answers before the reads of its ids.
  out.length = 0;
  ops.sort((a, b) => a.path.split('{').length - b.path.split('{').length);
  for (const op of ops) await get(op);
  return out;
}

/** The ids this workspace has, by prefix (`ct`, `waba`, …), and its sandbox number. */
class Ids {
  private readonly byPrefix = new Map<string, string>();
  private phone: string | undefined;
  harvest(answer: Answer): void {
    if (answer.status >= 300) return;
    const visit = (node: unknown) => {
      if (!node || typeof node !== 'object') return;
      const record = node as Record<string, unknown>;
      for (const [key, value] of Object.entries(record)) {
        const prefix = /(^|_)id$|Id$/.test(key) && typeof value === 'string' ? /^([a-z]+)_[0-9A-Za-z]{6,}$/.exec(value)?.[1] : undefined;
        if (prefix && !this.byPrefix.has(prefix)) this.byPrefix.set(prefix, value as string);
      }
      if (typeof record.display_phone_number === 'string') this.phone ??= record.display_phone_number;
      Object.values(record).forEach(visit);
    };
    visit(answer.body);
  }
  /** This workspace's id of the example id's kind, else undefined. */
  like(example: unknown): string | undefined {
    const prefix = typeof example === 'string' ? /^([a-z]+)_[0-9A-Za-z]{6,}$/.exec(example)?.[1] : undefined;
    return prefix ? this.byPrefix.get(prefix) : undefined;
  }
  substitute(body: unknown): unknown {
    if (Array.isArray(body)) return body.map((v) => this.substitute(v));
    if (body && typeof body === 'object') return Object.fromEntries(Object.entries(body).map(([k, v]) => [k, this.substitute(v)]));
    if (body === EXAMPLE_NUMBER) return this.phone ?? body;
    return this.like(body) ?? body;
  }
}

/** The business number the Messaging examples send from. */
const EXAMPLE_NUMBER = '+14155550100';

/** A parameter's value: the first item of the list above it, else this workspace's id of the example's kind. */
function valueFor(path: string, param: Parameter, answers: Recorded[], ids: Ids): unknown {
  const example = Object.values(param.examples ?? {})[0]?.value;
  if (param.in === 'path') {
    const parentPath = path.slice(0, path.indexOf(`/{${param.name}}`));
    const parent = answers.find((r) => r.answer.status < 300 && matches(parentPath, r.url));
    const first = (parent?.answer.body as { data?: Record<string, unknown>[] } | undefined)?.data?.[0];
    const snake = param.name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
    const value = first?.id ?? first?.[snake] ?? first?.[param.name];
    if (typeof value === 'string') return value;
  }
  return ids.like(example) ?? example;
}

function matches(template: string, url: string): boolean {
  return new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(url);
}

function resolve(doc: any, ref: string): unknown {
  return ref
    .slice(2)
    .split('/')
    .reduce((node, key) => node[key], doc);
}

/** A workspace of this file's own (its buckets and rows apart from the suites'), with every credential. */
async function workspace(base: string): Promise<Record<string, string>> {
  const post = async (path: string, body: unknown, token?: string) => {
    const res = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
    if (res.status !== 201) throw new Error(`${path} answered ${res.status}: ${await res.text()}`);
    return res.json();
  };
  const created = await post('/api/account/workspaces', {
    email: 'recorded@suite.example',
    password: 'contract-suite-password-1', // seedConnect signs in with the suite's password
    name: 'Recorded Answers',
    workspace_name: 'Recorded Answers',
    workspace_slug: 'recorded-answers',
  });
  const owner = created.session.access_token as string;
  const key = await post('/api/account/api-keys', { name: 'recorded answers' }, owner);
  return {
    OwnerBearer: owner,
    ApiKeyHeader: key.secret,
    ...(await seedConnect(base, owner)),
    ...(await seedMessaging(base, owner)),
  };
}
