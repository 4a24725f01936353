// Connect credentials for the contract suite on the server under test: a ConnectOAuth bearer
// obtained through the real flow, as a client would get it. The owner API registers a client,
// the owner signs in on the sign-in page, approves on the consent page (cookies and the form's
// token scraped from the HTML), and the code is exchanged with PKCE at the token endpoint.
import { createHash, randomBytes } from 'node:crypto';

// The contract workspace's owner, as test/contract/setup.ts creates it: the browser needs the
// password to sign in (the owner API token cannot open a browser session).
const OWNER_PASSWORD = 'contract-suite-password-1';
const REDIRECT_URI = 'https://crm.test/cb';
const SCOPES = 'documents:write links:write analytics:read webhooks:write';

class Jar {
  private readonly cookies = new Map<string, string>();
  absorb(res: Response) {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      this.cookies.set(pair!.slice(0, eq).trim(), pair!.slice(eq + 1).trim());
    }
  }
  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

function hiddenInputs(page: string): Record<string, string> {
  const out: Record<string, string> = {};
  const decode = (v: string) => v.replace(/&(amp|lt|gt|quot|#39);/g, (_, e: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[e]!);
  for (const m of page.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) out[m[1]!] = decode(m[2]!);
  return out;
}

/** Extra credentials by security scheme name, for a workspace whose owner token is `owner`. */
export async function seedConnect(base: string, owner: string): Promise<Record<string, string>> {
  const fail = async (step: string, res: Response) => {
    throw new Error(`seeding Connect: ${step} answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
  };
  const json = { 'content-type': 'application/json', authorization: `Bearer ${owner}` };
  const created = await fetch(`${base}/api/connect/clients`, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ name: 'Contract CRM', redirect_uris: [REDIRECT_URI] }),
  });
  if (created.status !== 201) await fail('create client', created);
  const client = (await created.json()) as { client_id: string; client_secret: string };
  const account = (await (await fetch(`${base}/api/account/me`, { headers: json })).json()) as { owner: { email: string } };

  const jar = new Jar();
  const browser = async (path: string, form?: Record<string, string>) => {
    const res = await fetch(`${base}${path}`, {
      method: form ? 'POST' : 'GET',
      redirect: 'manual',
      headers: { cookie: jar.header(), ...(form ? { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' } : {}) },
      body: form ? new URLSearchParams(form).toString() : undefined,
    });
    jar.absorb(res);
    return res;
  };
  const signInPage = await browser('/account/sign-in');
  const signedIn = await browser('/account/sign-in', {
    _csrf: hiddenInputs(await signInPage.text())._csrf ?? '',
    email: account.owner.email,
    password: OWNER_PASSWORD,
    next: '',
  });
  if (signedIn.status !== 303) await fail('sign-in', signedIn);

  const verifier = randomBytes(32).toString('base64url');
  const query = new URLSearchParams({
    client_id: client.client_id,
    redirect_uri: REDIRECT_URI,
    response_type: 'code',
    scope: SCOPES,
    state: 'contract',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  });
  const consentPage = await browser(`/connect/authorize?${query}`);
  if (consentPage.status !== 200) await fail('consent page', consentPage);
  const approved = await browser('/connect/authorize/decision', { ...hiddenInputs(await consentPage.text()), decision: 'approve' });
  if (approved.status !== 303) await fail('consent', approved);
  const code = new URL(approved.headers.get('location')!).searchParams.get('code')!;

  const exchanged = await fetch(`${base}/api/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
      client_id: client.client_id,
      client_secret: client.client_secret,
    }).toString(),
  });
  if (exchanged.status !== 200) await fail('token exchange', exchanged);
  return {
    ConnectOAuth: ((await exchanged.json()) as { access_token: string }).access_token,
    // The client's own credentials (HTTP Basic), for its client-level webhook endpoints.
    OAuthClientBasic: Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64'),
  };
}
