// The Login API's round trip on the real server, every answer checked against the contract:
// create an app, start, stream, the user's LOGIN message through the signed provider webhook,
// status, verify-token once and then never again, the JWKS.
import { createHmac } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
import { SERVER_SECRETS, type Answer } from '../http.js';
import { contractViolations } from '../validate.js';

const server = inject('contractTargets').find((t) => t.name === 'server');
// Known only when the suite started the server itself (not with CONTRACT_SERVER_URL).
const serviceNumber = inject('serviceNumber');

async function call(method: string, url: string, init: { headers?: Record<string, string>; body?: unknown } = {}): Promise<Answer> {
  const res = await fetch(url, {
    method,
    headers: { ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}), ...init.headers },
    body: init.body === undefined ? undefined : typeof init.body === 'string' ? init.body : JSON.stringify(init.body),
  });
  const text = await res.text();
  const contentType = (res.headers.get('content-type') ?? '').split(';')[0];
  return {
    status: res.status,
    headers: Object.fromEntries(res.headers.entries()),
    contentType,
    text,
    body: /json/.test(contentType) && text ? JSON.parse(text) : text,
  };
}

async function conforms(operationId: string, answer: Answer, status: number) {
  expect(answer.status, answer.text.slice(0, 300)).toBe(status);
  expect(await contractViolations('login', operationId, answer)).toEqual([]);
  return answer.body as any;
}

describe.skipIf(!server || !serviceNumber)('login round trip against the server', () => {
  it('start → LOGIN message → verified on the stream → status → verify-token once', async () => {
    const base = server!.urls.login;
    const owner = { authorization: `Bearer ${server!.credentials!.OwnerBearer}` };
    const created = await conforms(
      'createLoginApp',
      await call('POST', `${base}/api/login/apps`, { headers: owner, body: { name: 'Contract shop', use_service_phone: true, webhook_destination: 'none' } }),
      201,
    );
    const key = { 'x-api-key': created.api_key };
    await conforms('getLoginApp', await call('GET', `${base}/api/login/apps/${created.id}`, { headers: owner }), 200);

    const started = await conforms('startLoginSession', await call('POST', `${base}/v1/auth/chatapp/start`, { headers: key, body: {} }), 201);
    await conforms('getLoginSessionStatus', await call('GET', `${base}/v1/auth/chatapp/status/${started.sessionId}`, { headers: key }), 200);

    const stream = await fetch(`${base}/v1/auth/chatapp/events/${started.sessionId}?token=${encodeURIComponent(started.subscribeToken)}`);
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = stream.body!.getReader();
    let frames = '';
    const verified = (async () => {
      while (!frames.includes('event: verified')) {
        const { value, done } = await reader.read();
        if (done) break;
        frames += new TextDecoder().decode(value);
      }
    })();

    // The provider webhook names numbers by the provider's id.
    const digits = String(started.displayPhoneNumber).replace(/\D/g, '');
    const payload = JSON.stringify({
      object: 'whatsapp_business_account',
      entry: [
        {
          id: '1',
          changes: [
            {
              field: 'messages',
              value: {
                messaging_product: 'whatsapp',
                metadata: { display_phone_number: digits, phone_number_id: serviceNumber!.providerPhoneNumberId },
                contacts: [{ profile: { name: 'Ana' }, wa_id: '4915112345678' }],
                messages: [
                  {
                    from: '4915112345678',
                    id: `wamid.contract${Date.now()}`,
                    timestamp: String(Math.floor(Date.now() / 1000)),
                    type: 'text',
                    text: { body: `LOGIN ${started.loginCode}` },
                  },
                ],
              },
            },
          ],
        },
      ],
    });
    // The provider webhook is a Messaging operation: sent to its API's address (a validating
    // proxy per API under CONTRACT_TARGETS=proxy).
    const hook = await call('POST', `${server!.urls.messaging}/api/webhook/chatapp`, {
      headers: { 'x-hub-signature-256': `sha256=${createHmac('sha256', SERVER_SECRETS.providerAppSecret).update(payload).digest('hex')}` },
      body: payload,
    });
    expect(hook.status).toBe(200);
    await verified;
    await reader.cancel();
    expect(frames).toMatch(/^event: verified$/m);
    expect(frames).toContain(`data: {"event":"verified","sessionId":"${started.sessionId}"}`);

    const status = await conforms('getLoginSessionStatus', await call('GET', `${base}/v1/auth/chatapp/status/${started.sessionId}`, { headers: key }), 200);
    expect(status.status).toBe('success');
    const first = await conforms(
      'verifyToken',
      await call('POST', `${base}/v1/auth/verify-token`, { headers: key, body: { token: status.verificationToken } }),
      200,
    );
    expect(first).toMatchObject({ valid: true, user: { phone: '+4915112345678', name: 'Ana' } });
    const again = await conforms(
      'verifyToken',
      await call('POST', `${base}/v1/auth/verify-token`, { headers: key, body: { token: status.verificationToken } }),
      200,
    );
    expect(again).toMatchObject({ valid: false, reason: 'already_used' });
    await conforms('getLoginJwks', await call('GET', `${base}/v1/auth/.well-known/jwks.json`), 200);
  });
});
