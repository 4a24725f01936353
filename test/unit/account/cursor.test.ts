// Signed list cursors (server/lib/cursor.ts): bad-inputs B6 (another workspace's or operation's cursor)
// and bad-inputs H10 (random, truncated, edited) answer 400 validation naming /query/cursor.
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { decodeCursor, encodeCursor } from '#server/lib/cursor.js';
import { SecretBox } from '#server/lib/secrets.js';
import { buildShared } from '#test/helper.js';
import { bearer, createKey, signUp, type SignedUp } from './support.js';

const VALIDATION = 'https://chatapp.example/problems/validation';

describe('cursor', () => {
  const secrets = new SecretBox('another-test-master-key-of-32-characters!');
  const scope = { workspaceId: 'ws_aaaaaaaaaaaaaaaa', operation: 'listThings' };

  it('round-trips a position within its workspace and operation', () => {
    const cursor = encodeCursor(secrets, scope, { t: '2026-01-01T00:00:00.000Z', id: 'x_1' });
    expect(decodeCursor(secrets, scope, cursor)).toEqual({ t: '2026-01-01T00:00:00.000Z', id: 'x_1' });
    expect(decodeCursor(secrets, scope, undefined)).toBeUndefined();
  });

  it('refuses a cursor of another workspace, operation or server key', () => {
    const cursor = encodeCursor(secrets, scope, { id: 'x_1' });
    expect(() => decodeCursor(secrets, { ...scope, workspaceId: 'ws_bbbbbbbbbbbbbbbb' }, cursor)).toThrow();
    expect(() => decodeCursor(secrets, { ...scope, operation: 'listOther' }, cursor)).toThrow();
    expect(() => decodeCursor(new SecretBox('a-different-master-key-of-32-characters'), scope, cursor)).toThrow();
  });

  it('H10 refuses random, truncated and edited cursors', () => {
    const cursor = encodeCursor(secrets, scope, { id: 'x_1' });
    const [payload, mac] = cursor.split('.');
    const edited = `${Buffer.from(JSON.stringify({ id: 'x_2' })).toString('base64url')}.${mac}`;
    for (const bad of ['not-a-cursor', cursor.slice(0, -2), payload!, `${cursor}.x`, edited, '.', '']) {
      expect(() => decodeCursor(secrets, scope, bad), bad).toThrow(expect.objectContaining({ status: 400 }));
    }
  });

  it('H10 refuses every other last character of the signature, even one that decodes to the same bytes', () => {
    // 128 bits in 22 base64url characters: the last one carries 2 bits and 4 spare ones, which
    // decoding ignores; such an edit is still an edit.
    const cursor = encodeCursor(secrets, scope, { id: 'x_1' });
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const others = [...alphabet].filter((c) => c !== cursor.at(-1)).map((c) => `${cursor.slice(0, -1)}${c}`);
    expect(others).toHaveLength(63);
    for (const bad of others) expect(() => decodeCursor(secrets, scope, bad), bad).toThrow(expect.objectContaining({ status: 400 }));
  });
});

describe('listApiKeys cursors over HTTP', () => {
  let app: FastifyInstance;
  let a: SignedUp;
  let b: SignedUp;
  beforeAll(async () => {
    app = await buildShared();
    a = await signUp(app, 'cursor-a');
    b = await signUp(app, 'cursor-b');
    for (let i = 0; i < 2; i++) await createKey(app, a.token, { name: `a${i}` });
    await createKey(app, b.token, { name: 'b0' });
  });

  const list = (token: string, query: Record<string, string>) => app.inject({ url: '/api/account/api-keys', query, headers: bearer(token) });

  it("B6 a cursor from A's listing in B's list call is 400 validation, never A's rows", async () => {
    const page = (await list(a.token, { limit: '1' })).json();
    expect(page.next_cursor).toEqual(expect.any(String));
    const res = await list(b.token, { cursor: page.next_cursor });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ type: VALIDATION, errors: [{ pointer: '/query/cursor', detail: 'is not a cursor of this list' }] });
    expect(res.json()).not.toHaveProperty('data');
    expect(res.body).not.toMatch(/"name":"a\d"/);
  });

  it('B6 a cursor of another operation is 400 validation', async () => {
    const other = encodeCursor(
      app.platform.secrets,
      { workspaceId: b.workspace.id, operation: 'listDocuments' },
      { t: new Date().toISOString(), id: 'doc_x0000000' },
    );
    const res = await list(b.token, { cursor: other });
    expect(res.statusCode).toBe(400);
    expect(res.json().type).toBe(VALIDATION);
  });

  it('H10 random, truncated and edited cursors are 400', async () => {
    const page = (await list(a.token, { limit: '1' })).json();
    for (const cursor of ['not-a-cursor', page.next_cursor.slice(0, -3), `x${page.next_cursor}`]) {
      const res = await list(a.token, { cursor });
      expect(res.statusCode).toBe(400);
      expect(res.json().errors[0].pointer).toBe('/query/cursor');
    }
  });

  it('H9 limit outside 1..100 is 400; the default page is 20', async () => {
    for (const limit of ['0', '-1', '101', 'abc', '1.5']) expect((await list(a.token, { limit })).statusCode).toBe(400);
    const res = await list(a.token, {});
    expect(res.json()).toMatchObject({ has_more: false, next_cursor: null });
  });
});
