// The demo workspace is created once, on an empty store, and its printed credentials work.
import { describe, expect, it } from 'vitest';
import { seedDemoWorkspace } from '#server/demo.js';
import { build } from '../helper.js';

describe('demo workspace', () => {
  it('is created on an empty store with working credentials, and only once', async () => {
    const app = await build();
    const demo = await seedDemoWorkspace(app.platform);
    expect(demo).not.toBeNull();
    const session = await app.inject({ method: 'POST', url: '/api/account/sessions', payload: { email: demo!.email, password: demo!.password } });
    expect(session.statusCode).toBe(201);
    const me = await app.inject({ url: '/api/account/me', headers: { authorization: `Bearer ${session.json().access_token}` } });
    expect(me.json().workspace.id).toBe(demo!.workspaceId);
    const keys = await app.platform.store.db.selectFrom('api_keys').select(['digest', 'prefix']).execute();
    expect(keys).toHaveLength(1);
    expect(keys[0].digest).not.toContain(demo!.apiKey);
    expect(demo!.apiKey.startsWith(keys[0].prefix)).toBe(true);
    const numbers = await app.platform.store.db.selectFrom('phone_numbers').select('workspace_id').execute();
    expect(numbers).toEqual([{ workspace_id: demo!.workspaceId }]);
    expect(await seedDemoWorkspace(app.platform)).toBeNull();
  });
});
