// uploadSample, the resumable upload API behind template media samples, on the adapters: the
// Cloud adapter against the fake Graph API (session, then the bytes with `OAuth` and
// file_offset, then the handle), the missing app id (422 before any call), the sandbox's handle.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CloudApiProvider } from '#server/providers/cloud-api.js';
import { SandboxProvider } from '#server/providers/sandbox.js';
import { HttpProblem } from '#server/lib/problems.js';
import { FAKE_APP_ID, FAKE_TOKEN, FAKE_WABA_ID, FakeProvider } from '#test/fakes/fake-provider.js';
import { FILES } from './support.js';

const fake = new FakeProvider();
const account = { wabaId: FAKE_WABA_ID, accessToken: FAKE_TOKEN };
const file = { bytes: FILES.jpeg(3000), mimeType: 'image/jpeg', filename: 'header.jpg' };

beforeAll(() => fake.start());
afterAll(() => fake.stop());
beforeEach(() => fake.reset());

describe('uploadSample', () => {
  it('Cloud API: POST /{app-id}/uploads, then the bytes to the session with OAuth and file_offset 0; answers the handle', async () => {
    const cloud = new CloudApiProvider({ baseUrl: fake.baseUrl, appId: FAKE_APP_ID, maxRetries: 0 });
    const { handle } = await cloud.uploadSample(account, file);
    expect(fake.requests.map((r) => r.path)).toEqual([`/${FAKE_APP_ID}/uploads`, expect.stringMatching(/^\/upload:/)]);
    const [open, send] = fake.requests;
    expect(open!.query).toMatchObject({ file_name: 'header.jpg', file_length: '3000', file_type: 'image/jpeg' });
    expect(open!.headers.authorization).toBe(`Bearer ${FAKE_TOKEN}`);
    expect(send!.headers.authorization).toBe(`OAuth ${FAKE_TOKEN}`);
    expect(send!.headers.file_offset).toBe('0');
    expect(send!.query.sig).toBeDefined();
    expect(Buffer.compare(send!.body, file.bytes)).toBe(0);
    expect(fake.samples.get(handle)?.type).toBe('image/jpeg');
  });

  it('Cloud API without an app id: 422 naming PROVIDER_APP_ID, no call', async () => {
    const cloud = new CloudApiProvider({ baseUrl: fake.baseUrl, maxRetries: 0 });
    const error = await cloud.uploadSample(account, file).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HttpProblem);
    expect((error as HttpProblem).status).toBe(422);
    expect((error as HttpProblem).problem.detail).toContain('PROVIDER_APP_ID');
    expect(fake.requests).toHaveLength(0);
  });

  it("Cloud API: a refused token on the session is the provider's 190", async () => {
    const cloud = new CloudApiProvider({ baseUrl: fake.baseUrl, appId: FAKE_APP_ID, maxRetries: 0 });
    await expect(cloud.uploadSample({ ...account, accessToken: 'wrong' }, file)).rejects.toMatchObject({ code: 190 });
  });

  it("sandbox: a handle of Meta's shape carrying the type", async () => {
    const sandbox = new SandboxProvider({ db: undefined as never, deliverWebhook: async () => {} });
    const { handle } = await sandbox.uploadSample(account, file);
    expect(handle).toMatch(/^4::aW1hZ2UvanBlZw==:[A-Za-z0-9_-]+$/);
  });
});
