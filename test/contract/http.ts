// Turns a contract case into an HTTP request against a target and reads the answer.
import { createHmac } from 'node:crypto';
import type { ContractCase } from './cases.js';
import { multipartBody } from './multipart.js';

export interface Target {
  name: 'mock' | 'server';
  baseUrl(api: string): string;
  /** Real credentials by security scheme (the server's seeded workspace); placeholders otherwise. */
  credentials?: Record<string, string>;
}

export interface Answer {
  status: number;
  headers: Record<string, string>;
  contentType: string;
  body: unknown;
  text: string;
}

/** How each security scheme carries its credential, with a placeholder that has the right shape. */
const SCHEMES: Record<string, { in: 'header' | 'query'; name: string; prefix: string; placeholder: string }> = {
  ApiKeyHeader: { in: 'header', name: 'x-api-key', prefix: '', placeholder: 'mk_contract_placeholder' },
  OwnerBearer: { in: 'header', name: 'authorization', prefix: 'Bearer ', placeholder: 'contract.owner.jwt' },
  ConnectOAuth: { in: 'header', name: 'authorization', prefix: 'Bearer ', placeholder: 'ct_contract_token' },
  SubscribeToken: { in: 'query', name: 'token', prefix: '', placeholder: 'st_contract' },
  OAuthClientBasic: { in: 'header', name: 'authorization', prefix: 'Basic ', placeholder: Buffer.from('cli_contract:secret').toString('base64') },
  OidcClientBasic: { in: 'header', name: 'authorization', prefix: 'Basic ', placeholder: Buffer.from('app_contract:secret').toString('base64') },
  OidcAccessToken: { in: 'header', name: 'authorization', prefix: 'Bearer ', placeholder: 'lat_contract_token' },
  RegistrationInitialToken: { in: 'header', name: 'authorization', prefix: 'Bearer ', placeholder: 'rit_contract_token' },
  RegistrationAccessToken: { in: 'header', name: 'authorization', prefix: 'Bearer ', placeholder: 'rat_contract_token' },
};

/** The secrets the contract suite's server runs with (test/contract/setup.ts). */
export const SERVER_SECRETS = { providerAppSecret: 'contract-provider-app-secret', providerVerifyToken: 'example-verify-token' };

/** Signed operations: the spec's example signatures are illustrative; sign for the real server. */
const SERVER_SIGNERS: Record<string, (headers: Headers, body: BodyInit | undefined) => void> = {
  receiveProviderWebhook: (headers, body) => {
    if (headers.has('x-hub-signature-256') && typeof body === 'string') {
      headers.set('x-hub-signature-256', `sha256=${createHmac('sha256', SERVER_SECRETS.providerAppSecret).update(body).digest('hex')}`);
    }
  },
};

export function buildRequest(c: ContractCase, target: Target): { url: string; init: RequestInit } {
  const missing = c.params.filter((p) => p.in === 'path' && !(`path:${p.name}` in c.paramValues));
  if (missing.length)
    throw new Error(`example "${c.example}" of ${c.operationId} gives no value for path parameter(s) ${missing.map((p) => p.name).join(', ')}`);
  const path = c.path.replace(/\{([^}]+)\}/g, (_, name) => encodeURIComponent(String(c.paramValues[`path:${name}`])));
  const url = new URL(target.baseUrl(c.api) + path);
  const headers = new Headers();
  for (const p of c.params) {
    const value = c.paramValues[`${p.in}:${p.name}`];
    if (value === undefined) continue;
    if (p.in === 'query') {
      if (Array.isArray(value)) value.forEach((v) => url.searchParams.append(p.name, String(v)));
      else if (value && typeof value === 'object') Object.entries(value).forEach(([k, v]) => url.searchParams.append(`${p.name}[${k}]`, String(v)));
      else url.searchParams.set(p.name, String(value));
    } else if (p.in === 'header') {
      headers.set(p.name, String(value));
    }
  }
  // Prefer a requirement the target has real credentials for, else any the suite can shape.
  const usable = c.security.filter((r) => Object.keys(r).every((s) => s in SCHEMES));
  const requirement = usable.find((r) => Object.keys(r).every((s) => target.credentials?.[s])) ?? usable[0];
  for (const scheme of Object.keys(requirement ?? {})) {
    const how = SCHEMES[scheme];
    const value = how.prefix + (target.credentials?.[scheme] ?? how.placeholder);
    if (how.in === 'header') headers.set(how.name, value);
    else if (!url.searchParams.has(how.name)) url.searchParams.set(how.name, value);
  }
  if (target.name === 'mock' && c.status) headers.set('prefer', `code=${c.status}, example=${c.example}`);
  // Names the case for the validating proxy's report (test/contract/proxy-report.ts).
  headers.set('x-contract-case', `${c.operationId}/${c.example}`);
  let body: BodyInit | undefined;
  if (c.body === undefined && c.contentType === 'multipart/form-data') {
    body = multipartBody(c.operationId);
  } else if (c.body !== undefined && c.contentType) {
    if (c.contentType.startsWith('multipart/form-data')) {
      const form = new FormData();
      for (const [k, v] of Object.entries(c.body as Record<string, unknown>)) form.append(k, typeof v === 'string' ? v : JSON.stringify(v));
      body = form;
    } else if (c.contentType === 'application/x-www-form-urlencoded') {
      body = new URLSearchParams(Object.entries(c.body as Record<string, unknown>).map(([k, v]) => [k, String(v)]));
    } else {
      headers.set('content-type', c.contentType);
      body = typeof c.body === 'string' && !c.contentType.includes('json') ? c.body : JSON.stringify(c.body);
    }
  }
  if (target.name === 'server') SERVER_SIGNERS[c.operationId]?.(headers, body);
  return { url: url.toString(), init: { method: c.method, headers, body, redirect: 'manual' } };
}

export async function send(c: ContractCase, target: Target): Promise<Answer> {
  const { url, init } = buildRequest(c, target);
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(15_000) });
  const headers = Object.fromEntries(res.headers.entries());
  const contentType = (headers['content-type'] ?? '').split(';')[0].trim();
  // An event stream never ends by itself: the first chunk is enough to check its headers.
  let text = '';
  if (contentType === 'text/event-stream' && res.body) {
    const reader = res.body.getReader();
    const first = await reader.read();
    text = first.value ? new TextDecoder().decode(first.value) : '';
    await reader.cancel();
  } else {
    text = await res.text();
  }
  let body: unknown = text;
  if (/json/.test(contentType) && text) body = JSON.parse(text);
  return { status: res.status, headers, contentType, body, text };
}
