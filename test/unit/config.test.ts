import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../server/config.js';

describe('configuration', () => {
  it('has working defaults', () => {
    expect(loadConfig({})).toMatchObject({ port: 3000, host: '127.0.0.1', dataDir: './data', publicUrl: 'http://127.0.0.1:3000', logLevel: 'info' });
  });

  it('refuses bad values with one clear message naming each', () => {
    expect(() => loadConfig({ PORT: 'eighty', LOG_LEVEL: 'loud', PUBLIC_URL: 'ftp://x' })).toThrow(ConfigError);
    expect(() => loadConfig({ PORT: '70000', LOG_LEVEL: 'loud' })).toThrow(/PORT[\s\S]*LOG_LEVEL/);
  });

  it('K3 AUTH_FAILURES_PER_IP: 20 by default, a positive integer, anything else refused', () => {
    expect(loadConfig({}).authFailuresPerIp).toBe(20);
    expect(loadConfig({ AUTH_FAILURES_PER_IP: '5' }).authFailuresPerIp).toBe(5);
    for (const bad of ['0', '-1', '1.5', 'twenty', '1e3', ' 20', '1000001']) {
      expect(() => loadConfig({ AUTH_FAILURES_PER_IP: bad }), bad).toThrow(/AUTH_FAILURES_PER_IP must be an integer 1-1000000, got/);
    }
  });

  it('REFRESH_TOKEN_REUSE_GRACE_MS: 10 s by default, 0 turns the grace period off, at most 5 minutes', () => {
    expect(loadConfig({}).refreshTokenReuseGraceMs).toBe(10_000);
    expect(loadConfig({ REFRESH_TOKEN_REUSE_GRACE_MS: '0' }).refreshTokenReuseGraceMs).toBe(0);
    expect(loadConfig({ REFRESH_TOKEN_REUSE_GRACE_MS: '300000' }).refreshTokenReuseGraceMs).toBe(300_000);
    for (const bad of ['-1', '1.5', '10s', '300001', ' 5']) {
      expect(() => loadConfig({ REFRESH_TOKEN_REUSE_GRACE_MS: bad }), bad).toThrow(/REFRESH_TOKEN_REUSE_GRACE_MS must be an integer 0-300000 \(milliseconds\), got/);
    }
  });
});
