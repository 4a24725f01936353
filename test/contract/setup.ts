// Global set-up of the contract project: starts the Prism mocks and the real server (or uses
// CONTRACT_SERVER_URL), and hands their URLs to the suites. CONTRACT_TARGETS=mock or =server
// runs against one of them only. CONTRACT_TARGETS=proxy (`npm run test:proxy`) runs the server
// target through Prism's validating proxies (mocks/proxy.mjs) and fails on any response that
// breaks the contract, or any request that does other than a deliberately bad example's.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { API_ORDER, startMocks } from '../../mocks/mocks.mjs';
import { startProxies } from '../../mocks/proxy.mjs';
import { proxyVerdict, type ProxyViolation } from './proxy-report.js';
import { buildApp } from '#server/app.js';
import { loadConfig } from '#server/config.js';
import { implemented } from '#server/app.js';
import { API_NAMES } from '#server/contract.js';
import { freePort } from '../support/free-port.js';
import { closePooledStores, openTestStore } from '../support/store.js';
import { SERVER_SECRETS } from './http.js';
import { seedConnect } from './seed-connect.js';
import { seedMessaging } from './seed-messaging.js';
import { FakeProvider } from '../fakes/fake-provider.js';

/** The Cloud API token of the spec's createConnection examples, accepted by the fake provider. */
const EXAMPLE_GRAPH_TOKEN = 'EAAGm0PX4ZCpsBAKZBxZCexampletoken0123456789';

declare module 'vitest' {
  export interface ProvidedContext {
    contractTargets: { name: 'mock' | 'server'; urls: Record<string, string>; credentials?: Record<string, string> }[];
    implementedOperations: Record<string, string[]>;
    serviceNumber: { providerPhoneNumberId: string } | null;
  }
}

// Each Prism proxy listens on its port + 100 behind the front (mocks/proxy.mjs).
const TEST_PROXY_PORTS = { account: 4130, connect: 4131, login: 4132, messaging: 4133 };

export default async function setup(project: TestProject) {
  const wanted = (process.env.CONTRACT_TARGETS ?? 'mock,server').split(',');
  const targets: { name: 'mock' | 'server'; urls: Record<string, string>; credentials?: Record<string, string> }[] = [];
  const stops: (() => Promise<unknown>)[] = [];
  let serviceNumber: { providerPhoneNumberId: string } | null = null;

  if (wanted.includes('mock')) {
    // Free ports, not fixed ones: two runs of the suite on one machine (worktrees, CI beside a
    // developer) failed to start with EADDRINUSE on the second.
    const ports = Object.fromEntries(await Promise.all(API_ORDER.map(async (api) => [api, await freePort()] as const)));
    const mocks = await startMocks({ ports });
    stops.push(mocks.stop);
    targets.push({ name: 'mock', urls: mocks.urls });
  }
  const viaProxy = wanted.includes('proxy');
  if (wanted.includes('server') || viaProxy) {
    let base = process.env.CONTRACT_SERVER_URL;
    if (!base) {
      const dataDir = mkdtempSync(join(tmpdir(), 'contract-'));
      const store = await openTestStore();
      // The Cloud API examples (createConnection) talk to a fake Graph API on 127.0.0.1.
      const graph = await new FakeProvider({ tokens: [EXAMPLE_GRAPH_TOKEN], record: false }).start();
      const app = await buildApp(
        loadConfig({
          PORT: '0',
          HOST: '127.0.0.1',
          DATA_DIR: dataDir,
          LOG_LEVEL: 'silent',
          DEMO: 'false',
          PROVIDER_APP_SECRET: SERVER_SECRETS.providerAppSecret,
          PROVIDER_VERIFY_TOKEN: SERVER_SECRETS.providerVerifyToken,
          GRAPH_API_URL: graph.baseUrl,
          // Every example goes with the seeded credentials, and a rotation example leaves the
          // later ones with a dead key (401): the per-IP budget of failed authentications
          // (bad-inputs K3, tested in test/security/) must not turn the rest into 429s.
          AUTH_FAILURES_PER_IP: '1000',
        }),
        { store, sandboxTestMode: true },
      );
      base = await app.listen({ port: 0, host: '127.0.0.1' });
      serviceNumber = { providerPhoneNumberId: (await app.loginServiceNumber.get()).provider_phone_number_id };
      stops.push(async () => {
        await app.close();
        await store.close();
        await closePooledStores();
        await graph.stop();
        rmSync(dataDir, { recursive: true, force: true });
      });
    }
    const credentials = await seedWorkspace(base);
    if (viaProxy) {
      const violations: ProxyViolation[] = [];
      const bypassed: { reason: string }[] = [];
      const proxies = await startProxies({
        upstream: base,
        ports: TEST_PROXY_PORTS,
        onViolation: (v) => violations.push(v),
        onBypass: (b) => bypassed.push(b),
      });
      // At teardown, once every suite has run: the verdict throws on a violation (exit code 1).
      stops.push(async () => {
        await proxies.stop();
        proxyVerdict(violations, bypassed, base!);
      });
      targets.push({ name: 'server', urls: proxies.urls, credentials });
    } else {
      targets.push({ name: 'server', urls: Object.fromEntries(API_NAMES.map((api) => [api, base])), credentials });
    }
  }

  project.provide('contractTargets', targets);
  project.provide('serviceNumber', serviceNumber);
  project.provide('implementedOperations', Object.fromEntries(API_NAMES.map((api) => [api, [...implemented(api)]])));
  return async () => {
    const results = await Promise.allSettled(stops.map((stop) => stop()));
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) {
      // Vitest reports an error thrown here but still exits 0: the exit code says it.
      process.exitCode = 1;
      throw (failed as PromiseRejectedResult).reason;
    }
  };
}

/** A workspace on the server under test, and credentials for each scheme the suite can use. */
async function seedWorkspace(base: string): Promise<Record<string, string>> {
  const post = async (path: string, body: unknown, token?: string) => {
    const res = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
    if (res.status !== 201) throw new Error(`seeding ${path} answered ${res.status}: ${await res.text()}`);
    return res.json();
  };
  const created = await post('/api/account/workspaces', {
    email: 'contract@suite.example',
    password: 'contract-suite-password-1',
    name: 'Contract Suite',
    workspace_name: 'Contract Suite',
    workspace_slug: 'contract-suite',
  });
  const owner = created.session.access_token as string;
  const key = await post('/api/account/api-keys', { name: 'contract suite' }, owner);
  return {
    OwnerBearer: owner,
    ApiKeyHeader: key.secret,
    ...(await seedConnect(base, owner)),
    ...(await seedMessaging(base, owner)),
  };
}
