// The fixture itself: two workspaces whose credentials work, and a no-change check that can fail.
import { describe, expect, it } from 'vitest';
import { buildShared } from '../helper.js';
import { expectNoChange, workspaces } from './support.js';

describe('security fixtures', async () => {
  const app = await buildShared();
  const { a, b } = await workspaces(app);

  it('every credential of A and B works on its API', async () => {
    for (const w of [a, b]) {
      expect((await app.inject({ url: '/api/account/me', headers: { authorization: w.owner } })).statusCode).toBe(200);
      expect((await app.inject({ url: '/api/contacts', headers: w.headers })).statusCode).toBe(200);
      expect((await app.inject({ url: '/api/connect/documents', headers: { authorization: w.connect } })).statusCode).toBe(200);
    }
  });

  it('expectNoChange fails when a row is written', async () => {
    await expect(
      expectNoChange(app, () =>
        app.inject({ method: 'POST', url: '/api/contacts', headers: a.headers, payload: { name: 'Lena', contact_no: '+4915112345678' } }),
      ),
    ).rejects.toThrow();
  });
});
