// bad-inputs F-14: SIGTERM with an event stream open and webhook rows pending. The server stops taking
// connections, ends the stream (which got `retry:` when it opened, so the client reconnects to
// another instance), stops its outbox worker without leaving a lease on rows it had not started,
// and exits 0 within the grace period (server/shutdown.ts).
// Then SIGTERM while a request is in flight for 2 s. POST /api/template/validate-media-url
// fetches the URL it is given before it answers; the media server here holds that GET for 2 s,
// so the request is genuinely unfinished at the signal. It completes with its normal answer,
// new connections are refused meanwhile, and the process exits 0 once that connection is gone.
// A client that keeps its connection alive after the answer (undici's default, and every load
// balancer) would hold the process until the grace period: see the keep-alive test below.
import { createServer } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PNG } from '../unit/connect/content/support.js';
import { freshDatabase, openStream, report, startServer, startSession, waitFor, type Server } from './support.js';

const MEDIA_DELAY_MS = 2000;
let database: Awaited<ReturnType<typeof freshDatabase>>;
let server: Server;
const instances: Server[] = [];

beforeAll(async () => {
  database = await freshDatabase();
  server = await startServer(database.url, { SEED: '1', SHUTDOWN_GRACE_MS: '15000' });
});
afterAll(async () => {
  await Promise.all([server, ...instances].map((s) => s?.stop()));
  await database?.close();
});

it('F-14 SIGTERM: streams end after retry:, no lease left behind, exit 0 within the grace period', async () => {
  const seed = server.info;
  const stream = await openStream(seed.url, await startSession(seed));
  expect(stream.text).toMatch(/^retry: \d+/m);
  const started = Date.now();
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    server.process.once('exit', (code, signal) => resolve({ code, signal })),
  );
  server.process.kill('SIGTERM');
  const streamEnded = await stream.end(15_000);
  const exit = await exited;
  const ms = Date.now() - started;
  const leased = await database.db.selectFrom('outbox').select('id').where('lease_until', 'is not', null).execute();
  // A new connection after the exit is refused: nothing is listening any more.
  const after = await fetch(`${seed.url}/healthz`).then(
    (r) => r.status,
    () => 'refused',
  );
  report('F-14', { lost: 0, duplicated: 0, streamEnded: String(streamEnded), exitCode: String(exit.code), ms, leasesLeft: leased.length });
  expect(streamEnded).toBe(true);
  expect(exit).toEqual({ code: 0, signal: null });
  expect(ms).toBeLessThan(15_000);
  expect(leased).toEqual([]);
  expect(after).toBe('refused');
}, 120_000);

/** Whether a new TCP connection to `port` is refused (true) or accepted (false, closed at once). */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
  });
}

/**
 * A second instance on the same database (the owner's session of the first is valid there),
 * SIGTERM while its validate-media-url request waits 2 s for the media server; `keepAlive`
 * false sends the request on a connection the client closes after the answer.
 */
async function shutdownDuringRequest(keepAlive: boolean, graceMs: number) {
  const hits: number[] = [];
  let answeredAt = 0;
  const media = createServer((_req, res) => {
    hits.push(Date.now());
    setTimeout(() => {
      answeredAt = Date.now();
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': PNG.length }).end(PNG);
    }, MEDIA_DELAY_MS);
  });
  await new Promise<void>((r) => media.listen(0, '127.0.0.1', r));
  const dispatcher = keepAlive ? undefined : new Agent({ pipelining: 0 });
  try {
    const instance = await startServer(database.url, { SHUTDOWN_GRACE_MS: String(graceMs) });
    instances.push(instance);
    const port = Number(new URL(instance.info.url).port);
    const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
      instance.process.once('exit', (code, signal) => resolve({ code, signal })),
    );
    const requestStarted = Date.now();
    const inFlight = fetch(`${instance.info.url}/api/template/validate-media-url`, {
      method: 'POST',
      headers: { authorization: server.info.owner!, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `http://127.0.0.1:${(media.address() as AddressInfo).port}/banner.png`, kind: 'image' }),
      ...(dispatcher ? { dispatcher } : {}),
    } as RequestInit);
    // The server is now inside the request, waiting for the media server's answer.
    await waitFor(() => hits.length > 0, 10_000, 'the media fetch of the request');
    const acceptedBefore = !(await refused(port));
    const signalled = Date.now();
    instance.process.kill('SIGTERM');
    await waitFor(() => refused(port), MEDIA_DELAY_MS, 'new connections refused while the request is in flight');
    const refusedAt = Date.now();
    const res = await inFlight;
    const body = await res.json();
    const requestMs = Date.now() - requestStarted;
    const exit = await exited;
    const ms = Date.now() - signalled;
    report(`F-14 in-flight${keepAlive ? ' keep-alive' : ''}`, {
      lost: 0,
      duplicated: 0,
      status: res.status,
      requestMs,
      refusedAfterMs: refusedAt - signalled,
      answeredAfterMs: answeredAt - signalled,
      exitCode: String(exit.code),
      ms,
    });
    return {
      acceptedBefore,
      refusedBeforeAnswer: answeredAt === 0 || refusedAt <= answeredAt,
      status: res.status,
      body,
      requestMs,
      hits: hits.length,
      exit,
      ms,
    };
  } finally {
    await dispatcher?.close();
    media.closeAllConnections();
    await new Promise((r) => media.close(r));
  }
}

function expectCompletedAndExited(run: Awaited<ReturnType<typeof shutdownDuringRequest>>, graceMs: number) {
  expect(run.acceptedBefore).toBe(true);
  // The refusal came while the request was still waiting for its media, not after it ended.
  expect(run.refusedBeforeAnswer).toBe(true);
  expect(run.status).toBe(200);
  expect(run.body).toMatchObject({ reachable: true, http_status: 200, content_type: 'image/png', within_limits: true, problems: [] });
  expect(run.requestMs).toBeGreaterThanOrEqual(MEDIA_DELAY_MS);
  expect(run.hits).toBe(1);
  expect(run.exit).toEqual({ code: 0, signal: null });
  expect(run.ms).toBeLessThan(graceMs);
}

it('F-14 SIGTERM with a 2 s request in flight: it completes with its normal answer, new connections refused, exit 0', async () => {
  expectCompletedAndExited(await shutdownDuringRequest(false, 15_000), 15_000);
}, 120_000);

// The answer of a request in flight at SIGTERM carries `Connection: close` (server/app.ts), so a
// kept-alive client connection ends with it and server.close() need not wait out the grace period.
it('F-14 SIGTERM with a 2 s request in flight on a kept-alive connection: exit 0 within the grace period', async () => {
  expectCompletedAndExited(await shutdownDuringRequest(true, 8_000), 8_000);
}, 120_000);
