import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '#server/config.js';

describe('configuration', () => {
  it('has working defaults', () => {
    expect(loadConfig({})).toMatchObject({ port: 3000, host: '127.0.0.1', dataDir: './data', publicUrl: 'http://127.0.0.1:3000', logLevel: 'info' });
  });

  it('refuses bad values with one clear message naming each', () => {
    expect(() => loadConfig({ PORT: 'eighty', LOG_LEVEL: 'loud', PUBLIC_URL: 'ftp://x' })).toThrow(ConfigError);
    expect(() => loadConfig({ PORT: '70000', LOG_LEVEL: 'loud' })).toThrow(/PORT[\s\S]*LOG_LEVEL/);
  });

  it('a bad PORT is said once: the PUBLIC_URL derived from it is not reported too', () => {
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(/^Cannot start: PORT must be an integer 0-65535, got "eighty"\.$/);
    expect(() => loadConfig({ PORT: '70000', PUBLIC_URL: 'nope' })).toThrow(
      /^Cannot start: 2 settings are invalid:\n {2}PORT [^\n]*\n {2}PUBLIC_URL must be an absolute URL, got "nope"$/,
    );
  });

  it('production: PUBLIC_URL, SECRET_KEY and PostgreSQL required, the embedded store only when allowed', () => {
    const base = { NODE_ENV: 'production', SECRET_KEY: 'k'.repeat(40) };
    expect(() => loadConfig(base)).toThrow(ConfigError);
    const problems = (env: Record<string, string>) => {
      try {
        loadConfig(env);
        return [];
      } catch (error) {
        return (error as ConfigError).problems;
      }
    };
    expect(problems(base)).toEqual([
      expect.stringMatching(/^PUBLIC_URL is required when NODE_ENV=production/),
      expect.stringMatching(/^DATABASE_URL is required .*ALLOW_EMBEDDED_STORE=1$/),
    ]);
    expect(problems({ ...base, PUBLIC_URL: 'https://chat.example' })).toEqual([expect.stringMatching(/^DATABASE_URL is required/)]);
    expect(problems({ NODE_ENV: 'production', PUBLIC_URL: 'https://chat.example', DATABASE_URL: 'postgres://db/chat' })).toEqual([
      expect.stringMatching(/^SECRET_KEY is required/),
    ]);
    const onPostgres = loadConfig({ ...base, PUBLIC_URL: 'https://chat.example/', DATABASE_URL: 'postgres://db/chat' });
    expect(onPostgres).toMatchObject({ publicUrl: 'https://chat.example', production: true, signup: 'closed', logFormat: 'json', allowEmbeddedStore: false });
    expect(loadConfig({ ...base, PUBLIC_URL: 'https://chat.example', ALLOW_EMBEDDED_STORE: '1' })).toMatchObject({
      allowEmbeddedStore: true,
      databaseUrl: undefined,
    });
    expect(problems({ ...base, PUBLIC_URL: 'https://chat.example', ALLOW_EMBEDDED_STORE: 'sure' })).toEqual([
      'ALLOW_EMBEDDED_STORE must be true or false, got "sure"',
      expect.stringMatching(/^DATABASE_URL is required/),
    ]);
  });

  it('SIGNUP: open in development, closed in production, one of open, invite, closed', () => {
    expect(loadConfig({}).signup).toBe('open');
    expect(loadConfig({ SIGNUP: 'invite' }).signup).toBe('invite');
    expect(loadConfig({ SIGNUP: 'closed' }).signup).toBe('closed');
    for (const bad of ['Open', 'yes', 'invite-only']) expect(() => loadConfig({ SIGNUP: bad }), bad).toThrow(/SIGNUP must be one of open, invite, closed, got/);
  });

  it('LOG_FORMAT: pretty in development, json in production, nothing else', () => {
    expect(loadConfig({}).logFormat).toBe('pretty');
    expect(loadConfig({ LOG_FORMAT: 'json' }).logFormat).toBe('json');
    expect(() => loadConfig({ LOG_FORMAT: 'text' })).toThrow(/LOG_FORMAT must be one of pretty, json, got "text"/);
  });

  it('TRUST_PROXY: off by default; true, a hop count, or addresses, ranges and proxy-addr names', () => {
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: 'false' }).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadConfig({ TRUST_PROXY: 'loopback, 10.0.0.0/8,fd00::/8,192.0.2.7' }).trustProxy).toEqual(['loopback', '10.0.0.0/8', 'fd00::/8', '192.0.2.7']);
    for (const bad of ['10.0.0.0/33', '300.1.1.1', 'proxy.example', '1.2.3', '::1/129', '10.0.0.1/8/8', '100']) {
      expect(() => loadConfig({ TRUST_PROXY: bad }), bad).toThrow(/TRUST_PROXY must be true, false, a number of proxies/);
    }
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
      expect(() => loadConfig({ REFRESH_TOKEN_REUSE_GRACE_MS: bad }), bad).toThrow(
        /REFRESH_TOKEN_REUSE_GRACE_MS must be an integer 0-300000 \(milliseconds\), got/,
      );
    }
  });

  it("the campaign cap, the shutdown grace and the workers' schedules: defaults, overrides, and an unusable value leaves the default", () => {
    const defaults = loadConfig({});
    expect(defaults).toMatchObject({ campaignMaxRecipients: 100_000, shutdownGraceMs: 25_000 });
    expect(Object.values(defaults.workers).every((v) => v === undefined)).toBe(true);
    const set = loadConfig({
      CAMPAIGN_MAX_RECIPIENTS: '50',
      SHUTDOWN_GRACE_MS: '15000',
      WORKER_IDLE_MS: '90000',
      OUTBOX_LEASE_MS: '12000',
      CAMPAIGN_LEASE_MS: '2000',
      CAMPAIGN_POLL_MS: '3600000',
      AUTOMATION_POLL_MS: '200',
      INBOUND_SWEEP_MS: '3600000',
      PROVIDER_INBOX_LEASE_MS: '1000',
      PROVIDER_INBOX_POLL_MS: '50',
      PROVIDER_INBOX_RETRY_MS: '5',
    });
    expect(set).toMatchObject({ campaignMaxRecipients: 50, shutdownGraceMs: 15_000 });
    expect(set.workers).toEqual({
      idleMs: 90_000,
      outboxLeaseMs: 12_000,
      campaignLeaseMs: 2000,
      campaignPollMs: 3_600_000,
      automationPollMs: 200,
      inboundSweepMs: 3_600_000,
      providerInboxLeaseMs: 1000,
      providerInboxPollMs: 50,
      providerInboxRetryMs: 5,
    });
    const unusable = loadConfig({
      CAMPAIGN_MAX_RECIPIENTS: '1.5',
      SHUTDOWN_GRACE_MS: 'soon',
      CAMPAIGN_POLL_MS: '0',
      AUTOMATION_POLL_MS: '-5',
      INBOUND_SWEEP_MS: 'hourly',
    });
    expect(unusable).toMatchObject({ campaignMaxRecipients: 100_000, shutdownGraceMs: 25_000 });
    expect(unusable.workers).toMatchObject({ campaignPollMs: undefined, automationPollMs: undefined, inboundSweepMs: undefined });
  });

  it('is read by server/config.ts alone: no other module of server/ reads the environment', () => {
    const server = fileURLToPath(new URL('../../server/', import.meta.url));
    const readers = readdirSync(server, { recursive: true, encoding: 'utf8' }).filter(
      (file) => /\.[cm]?[jt]s$/.test(file) && readFileSync(`${server}${file}`, 'utf8').includes('process.env'),
    );
    expect(readers).toEqual(['config.ts']);
  });
});
