// What the docs pages list: the four APIs, their documents, mock ports and guides.
// Guides are trusted Markdown files in docs/getting-started/<api>.md, read once at start.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { Marked, type Tokens } from 'marked';
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

/**
 * Markdown as GitHub renders it, headings with GitHub's ids (lower case, punctuation dropped,
 * spaces as hyphens), so that `README.md#configuration` finds its section on the served page too.
 */
const gfm = new Marked({
  gfm: true,
  renderer: {
    heading(this: { parser: { parseInline(tokens: Tokens.Heading['tokens']): string } }, { tokens, depth, text }: Tokens.Heading) {
      const id = text
        .toLowerCase()
        .replace(/<[^>]*>/g, '')
        .replace(/[^\p{L}\p{N}\s_-]/gu, '')
        .trim()
        .replace(/\s/g, '-');
      return `<h${depth} id="${id}">${this.parser.parseInline(tokens)}</h${depth}>\n`;
    },
  },
});
const render = (text: string) => gfm.parse(text, { async: false });

const docsDir = new URL('../../docs/', import.meta.url);
const guidesDir = new URL('./getting-started/', docsDir);
/** The README beside docs/ (copied into dist/ by the build, as docs/ is). */
const readmeFile = new URL('../../README.md', import.meta.url);

/** The address the guides are written for; a served guide names the server's own instead. */
export const GUIDES_ORIGIN = 'http://127.0.0.1:3000';
/** Where the repository's documents (docs/*.md and the README) are served: `/docs/repo/<name>`. */
export const REPO_DOCS_PATH = `${DOCS_PATH}/repo`;
export const repoDocUrl = (name: string, anchor = '') => `${REPO_DOCS_PATH}/${name}${anchor}`;

/**
 * The guides that exist, rendered once: a guide added to docs/getting-started/ appears on
 * restart. `origin` (the server's PUBLIC_URL) replaces the address they are written for, and the
 * repository documents they name (`docs/webhooks.md`, the README) become links to their pages.
 */
export function loadGuides(origin = GUIDES_ORIGIN, docs: ReadonlySet<string> = repoDocNames()): Map<ApiName, Guide> {
  const guides = new Map<ApiName, Guide>();
  for (const api of API_NAMES) {
    const file = new URL(`${api}.md`, guidesDir);
    if (!existsSync(file)) continue;
    const markdown = readFileSync(file, 'utf8').replaceAll(GUIDES_ORIGIN, origin);
    const title = /^#\s+(.+)$/m.exec(markdown)?.[1]?.trim() ?? `Getting started: ${api}`;
    guides.set(api, { title, html: linkRepoDocs(render(markdown), docs) });
  }
  return guides;
}

/** The names of the repository documents served: `README` and each docs/<name>.md. */
export function repoDocNames(): Set<string> {
  const names = new Set<string>();
  if (existsSync(readmeFile)) names.add('README');
  if (existsSync(docsDir)) for (const file of readdirSync(docsDir)) if (file.endsWith('.md')) names.add(file.slice(0, -3));
  return names;
}

/** The repository documents, rendered once, with their links between each other made served ones. */
export function loadRepoDocs(origin = GUIDES_ORIGIN): Map<string, Guide> {
  const names = repoDocNames();
  const docs = new Map<string, Guide>();
  for (const name of names) {
    const markdown = readFileSync(name === 'README' ? readmeFile : new URL(`${name}.md`, docsDir), 'utf8').replaceAll(GUIDES_ORIGIN, origin);
    const title = /^#\s+(.+)$/m.exec(markdown)?.[1]?.trim() ?? name;
    docs.set(name, { title, html: linkRepoDocs(render(markdown), names) });
  }
  return docs;
}

/**
 * Links to repository documents, in rendered HTML, made links to their served pages: Markdown
 * links (`href="docs/webhooks.md#retries"`, `href="webhooks.md"`, `href="../README.md"`) and the
 * names in code (`<code>docs/webhooks.md</code>`). A link to a file that is not served (source,
 * scripts) loses its href rather than leading to a 404.
 */
export function linkRepoDocs(rendered: string, names: ReadonlySet<string>): string {
  // From docs/, docs/getting-started/ or the root: `webhooks.md`, `docs/webhooks.md`, `../../README.md`
  // (never another folder's README: clients/README.md is not the root's).
  const target = (path: string): string | undefined => {
    const name = /^(?:\.\.?\/)*(?:docs\/)?([\w.-]+)\.md$/.exec(path)?.[1];
    if (name === 'README' && /docs\//.test(path)) return undefined;
    return name && names.has(name) ? name : undefined;
  };
  return rendered
    .replace(/<a href="([^"#:]*)(#[^"]*)?">/g, (whole, path: string, anchor = '') => {
      if (!path || path.startsWith('/')) return whole;
      const name = target(path);
      return name ? `<a href="${repoDocUrl(name, anchor)}">` : '<a>';
    })
    .replace(/(?<!<a href="[^"]*">)<code>((?:docs\/)?[\w.-]+\.md|README)<\/code>/g, (whole, path: string) => {
      const name = path === 'README' ? 'README' : target(path);
      return name ? `<a href="${repoDocUrl(name)}">${whole}</a>` : whole;
    });
}
