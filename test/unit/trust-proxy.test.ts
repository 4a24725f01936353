// TRUST_PROXY decides whose address the per-IP limits count: the socket's (the proxy's) by
// default, the client's from X-Forwarded-For when the proxy is trusted.
import { describe, expect, it } from 'vitest';
import { build } from '../helper.js';

const PUBLIC = '/.well-known/oauth-authorization-server'; // public: limited per client IP
const PROXY = '10.1.2.3';

/** Three clients behind one proxy, one request each: how many got 429. */
async function limitedBehindProxy(env: Record<string, string>): Promise<number> {
  const app = await build({ env: { RATE_LIMIT_IP_PER_MINUTE: '1', ...env } });
  let limited = 0;
  for (const client of ['198.51.100.1', '198.51.100.2', '198.51.100.3']) {
    const res = await app.inject({ url: PUBLIC, remoteAddress: PROXY, headers: { 'x-forwarded-for': client } });
    if (res.statusCode === 429) limited++;
  }
  return limited;
}

describe('TRUST_PROXY', () => {
  it('off: every client behind the proxy shares its bucket', async () => {
    expect(await limitedBehindProxy({})).toBe(2);
  });

  it.each(['true', '1', '10.0.0.0/8', 'loopback, 10.1.2.3'])('%s: each client has its own bucket', async (value) => {
    expect(await limitedBehindProxy({ TRUST_PROXY: value })).toBe(0);
  });

  it('a list that does not name the proxy: X-Forwarded-For is not believed', async () => {
    expect(await limitedBehindProxy({ TRUST_PROXY: '192.0.2.0/24' })).toBe(2);
  });
});
