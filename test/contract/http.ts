// Turns a contract case into an HTTP request against a target and reads the answer.
import type { ContractCase } from './cases.js';
import { multipartBody } from './multipart.js';

export interface Target {
  name: 'mock' | 'server';
  baseUrl(api: string): string;
}

export interface Answer {
  status: number;
  headers: Record<string, string>;
  contentType: string;
  body: unknown;
  text: string;
}

/** Placeholder credentials that satisfy each security scheme's shape. */
const CREDENTIALS: Record<string, { header?: [string, string]; query?: [string, string] }> = {
  ApiKeyHeader: { header: ['x-api-key', 'sk_test_contract'] },
  ApiKeyAuthorization: { header: ['authorization', 'ApiKey sk_test_contract'] },
  OwnerBearer: { header: ['authorization', 'Bearer contract.owner.jwt'] },
  ConnectOAuth: { header: ['authorization', 'Bearer ct_contract_token'] },
  SubscribeToken: { query: ['token', 'st_contract'] },
  BasicAuth: { header: ['authorization', `Basic ${Buffer.from('cli_contract:secret').toString('base64')}`] },
};

export function buildRequest(c: ContractCase, target: Target): { url: string; init: RequestInit } {
  const missing = c.params.filter((p) => p.in === 'path' && !(`path:${p.name}` in c.paramValues));
  if (missing.length) throw new Error(`example "${c.example}" of ${c.operationId} gives no value for path parameter(s) ${missing.map((p) => p.name).join(', ')}`);
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
  const requirement = c.security.find((r) => Object.keys(r).every((s) => s in CREDENTIALS));
  for (const scheme of Object.keys(requirement ?? {})) {
    const cred = CREDENTIALS[scheme];
    if (cred.header) headers.set(...cred.header);
    if (cred.query && !url.searchParams.has(cred.query[0])) url.searchParams.set(...cred.query);
  }
  if (target.name === 'mock' && c.status) headers.set('prefer', `code=${c.status}, example=${c.example}`);
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
