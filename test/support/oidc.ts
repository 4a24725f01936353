// Driving an app's OpenID Connect sign-in by HTTP alone, as a browser would without script: the
// authorization request, the page's data (request id, session, LOGIN code), the LOGIN message
// from the sandbox phone, the page's complete call with its cookie, and the redirect's code.
import { createHash, randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { sendFromSandboxPhone } from '#server/apis/messaging/sandbox-phone/phone.js';
import { insertLoginApp } from './login-app.js';
import { eventually } from './eventually.js';

export const REDIRECT_URI = 'https://shop.test/auth/callback';

/** A Login app (own workspace, sandbox number) registered as an OIDC client of `redirectUris`. */
export async function oidcApp(app: FastifyInstance, options: { clientType?: 'confidential' | 'public'; redirectUris?: string[] } = {}) {
  const fixture = await insertLoginApp(app);
  await app.platform.store.db
    .updateTable('login_apps')
    .set({ oidc_redirect_uris: options.redirectUris ?? [REDIRECT_URI], oidc_client_type: options.clientType ?? 'confidential' })
    .where('id', '=', fixture.appId)
    .execute();
  return { ...fixture, issuer: `${app.platform.config.publicUrl}/login/oidc/${fixture.appId}` };
}
export type OidcFixture = Awaited<ReturnType<typeof oidcApp>>;

export function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

/** GET authorize with these parameters (the app's client id and redirect URI unless given). */
export function authorize(app: FastifyInstance, f: OidcFixture, params: Record<string, string | string[] | undefined>, cookie?: string) {
  const query = new URLSearchParams();
  const all = { client_id: f.appId, redirect_uri: REDIRECT_URI, response_type: 'code', scope: 'openid phone profile', ...params };
  for (const [name, value] of Object.entries(all)) for (const v of [value ?? []].flat()) query.append(name, v);
  return app.inject({ method: 'GET', url: `/login/oidc/${f.appId}/authorize?${query}`, headers: cookie ? { cookie } : {} });
}

/** What the sign-in page carries for its script and shows the user. */
export function pageData(body: string) {
  const attr = (name: string) => new RegExp(`data-${name}="([^"]+)"`).exec(body)?.[1];
  return {
    requestId: attr('request')!,
    sessionId: attr('session')!,
    subscribeToken: attr('subscribe-token')!,
    loginCode: /<code id="message">LOGIN ([0-9A-Z]{8})<\/code>/.exec(body)?.[1],
  };
}

/** The page's own call `action` with this browser's cookie. */
export function pageCall(app: FastifyInstance, f: OidcFixture, action: string, cookie: string | undefined, body: object) {
  return app.inject({
    method: 'POST',
    url: `/login/oidc/${f.appId}/authorize/${action}`,
    headers: { 'content-type': 'application/json', ...(cookie ? { cookie } : {}) },
    payload: JSON.stringify(body),
  });
}

export const cookieOf = (setCookie: string | string[] | undefined) => [setCookie ?? []].flat()[0]?.split(';')[0];

/**
 * The whole front channel: authorize, LOGIN from `phone`, complete. Answers the redirect's
 * parameters (`code`, `state`, `iss`) and the browser cookie.
 */
export async function signIn(app: FastifyInstance, f: OidcFixture, params: Record<string, string | undefined>, phone = '+15550104321') {
  const page = await authorize(app, f, params);
  if (page.statusCode !== 200) throw new Error(`authorize answered ${page.statusCode}: ${page.body.slice(0, 300)}`);
  const cookie = cookieOf(page.headers['set-cookie'])!;
  const data = pageData(page.body);
  await sendFromSandboxPhone(app, { phoneNumberId: f.numbers[0]!.id, from: phone, name: 'Ana Souza', text: `LOGIN ${data.loginCode}` });
  const redirect = await eventually(
    async () => {
      const res = await pageCall(app, f, 'complete', cookie, { request: data.requestId });
      const body = res.json() as { status: string; redirect?: string };
      return body.status === 'success' ? body.redirect : undefined;
    },
    { within: 5000 },
  );
  const url = new URL(redirect!);
  return { url, code: url.searchParams.get('code')!, cookie, data };
}

/** POST the token endpoint with a form body (and HTTP Basic when `auth` is given). */
export function tokenRequest(app: FastifyInstance, f: OidcFixture, form: Record<string, string>, auth?: string) {
  return app.inject({
    method: 'POST',
    url: `/login/oidc/${f.appId}/token`,
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(auth ? { authorization: auth } : {}) },
    payload: new URLSearchParams(form).toString(),
  });
}

/** The last one-time code the workspace's sandbox number sent to `to` (as the simulated phone shows it). */
export async function lastCodeSent(app: FastifyInstance, workspaceId: string, to: string): Promise<string> {
  const row = await app.platform.store.db
    .selectFrom('messages')
    .innerJoin('contacts', 'contacts.id', 'messages.contact_id')
    .select('messages.content')
    .where('messages.workspace_id', '=', workspaceId)
    .where('messages.direction', '=', 'outbound')
    .where('contacts.phone', '=', to)
    .orderBy('messages.created_at', 'desc')
    .orderBy('messages.id', 'desc')
    .executeTakeFirstOrThrow();
  const content = (typeof row.content === 'string' ? JSON.parse(row.content) : row.content) as { text: string };
  return /^(\d{6}) is your verification code/.exec(content.text)![1]!;
}
