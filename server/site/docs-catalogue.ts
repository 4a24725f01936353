// What the docs pages list: the four APIs, their documents, mock ports and guides.
// Guides are trusted Markdown files in docs/getting-started/<api>.md, read once at start.
import { existsSync, readFileSync } from 'node:fs';
import { marked } from 'marked';
import { API_NAMES, type ApiName } from '../contract.js';

export const DOCS_PATH = '/docs';
export const DOCS_ASSETS_PATH = '/docs/assets';

export interface ApiEntry {
  name: ApiName;
  title: string;
  summary: string;
  /** Port of its Prism mock under `npm run mock` (mocks/mocks.mjs). */
  mockPort: number;
  /** TS client factory from clients/ (bad-inputs H1). */
  client: string;
}

export const APIS: readonly ApiEntry[] = [
  {
    name: 'connect',
    title: 'Connect API',
    summary: 'OAuth 2.0 clients (PKCE), documents and tracked share links, signed webhooks for third-party apps.',
    mockPort: 4011,
    client: 'createConnectClient',
  },
  {
    name: 'login',
    title: 'Login API',
    summary: 'Passwordless sign-in: the user sends a LOGIN code by chat, you get a verified phone number by stream, poll or webhook.',
    mockPort: 4012,
    client: 'createLoginClient',
  },
  {
    name: 'messaging',
    title: 'Messaging API',
    summary: 'Connected numbers, contacts, messages and inbox, templates, campaigns, automations and bots.',
    mockPort: 4013,
    client: 'createMessagingClient',
  },
  {
    name: 'account',
    title: 'Account API',
    summary: "The owner's API: sign-up and sessions, workspace, API keys.",
    mockPort: 4010,
    client: 'createAccountClient',
  },
];

export function isApiName(value: string): value is ApiName {
  return (API_NAMES as readonly string[]).includes(value);
}

export const documentUrl = (api: ApiName, variant: '3.0' | '3.1') => `/openapi/${api}.${variant}.yaml`;
/** The same 3.1 document with every `$ref` inlined (written by `npm run generate`, served by plugins/documents.ts). */
export const dereferencedUrl = (api: ApiName) => `/openapi/${api}.3.1.dereferenced.json`;
export const referenceUrl = (api: ApiName) => `${DOCS_PATH}/${api}`;
export const guideUrl = (api: ApiName) => `${DOCS_PATH}/${api}/getting-started`;

export interface Guide {
  title: string;
  /** Rendered HTML: the files are ours (trusted), so marked's output is used as is. */
  html: string;
}

const guidesDir = new URL('../../docs/getting-started/', import.meta.url);

/** The guides that exist, rendered once: a guide added to docs/getting-started/ appears on restart. */
export function loadGuides(): Map<ApiName, Guide> {
  const guides = new Map<ApiName, Guide>();
  for (const api of API_NAMES) {
    const file = new URL(`${api}.md`, guidesDir);
    if (!existsSync(file)) continue;
    const markdown = readFileSync(file, 'utf8');
    const title = /^#\s+(.+)$/m.exec(markdown)?.[1]?.trim() ?? `Getting started: ${api}`;
    guides.set(api, { title, html: marked.parse(markdown, { async: false, gfm: true }) });
  }
  return guides;
}
