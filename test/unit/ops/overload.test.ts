// The overload guard (server/ops/overload.ts): beyond OVERLOAD_MAX_IN_FLIGHT requests in flight,
// a bulk request is refused at once with 503 problem+json and Retry-After, before its body is
// read (its body is never sent here); the provider webhook and Login verification still get in on
// their reserve; /readyz is never refused; once the requests in flight end, bulk traffic is
// admitted again. Requests are held in flight by sending their headers and only part of their body.
import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { build } from '#test/helper.js';
import { workspace } from '#test/security/support.js';

const sockets: Socket[] = [];
afterEach(() => {
  for (const socket of sockets.splice(0)) socket.destroy();
});

/** A raw HTTP/1.1 request on its own socket; resolves with the whole answer once the server writes one. */
function raw(port: number, head: string, body = '') {
  const socket: Socket = connect(port, '127.0.0.1');
  sockets.push(socket);
  let text = '';
  const answered = new Promise<string>((resolve) => {
    socket.on('data', (chunk) => {
      text += chunk;
      if (/\r\n\r\n/.test(text) && (/content-length: 0\r\n/i.test(text) || /\}$/.test(text))) resolve(text);
    });
    socket.on('close', () => resolve(text));
  });
  socket.write(`${head}\r\n\r\n${body}`);
  return { socket, answered };
}

it('refuses bulk beyond the limit with 503 + Retry-After before reading the body; priority and probes still pass', async () => {
  const app = await build({ env: { OVERLOAD_MAX_IN_FLIGHT: '2', OVERLOAD_PRIORITY_RESERVE: '1' } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  const w = await workspace(app);
  const partial = (length: number) =>
    `POST /api/contacts HTTP/1.1\r\nhost: x\r\nx-api-key: ${w.key}\r\ncontent-type: application/json\r\ncontent-length: ${length}`;

  // Two contact creations in flight, their bodies still arriving.
  const held = [raw(port, partial(60), '{"contact_no":'), raw(port, partial(60), '{"contact_no":')];
  const full = 'POST /api/contacts HTTP/1.1\r\nhost: x\r\n';
  await expect
    .poll(async () => (await raw(port, `${full}x-api-key: ${w.key}\r\ncontent-type: application/json\r\ncontent-length: 1000000`).answered).split('\r\n')[0])
    .toBe('HTTP/1.1 503 Service Unavailable');
  const refused = await raw(port, `${full}x-api-key: ${w.key}\r\ncontent-type: application/json\r\ncontent-length: 1000000`).answered;
  expect(refused).toMatch(/^HTTP\/1\.1 503 /);
  expect(refused).toMatch(/\r\nretry-after: 2\r\n/i);
  expect(refused).toMatch(/\r\ncontent-type: application\/problem\+json/i);
  expect(refused).toMatch(/\r\nx-request-id: [0-9a-f-]{36}\r\n/i);
  expect(JSON.parse(refused.slice(refused.indexOf('\r\n\r\n') + 4))).toMatchObject({
    type: 'https://chatapp.example/problems/unavailable',
    status: 503,
    detail: 'The server is overloaded; retry after the time in Retry-After.',
  });

  // Priority: a Login session status (the reserve), and the probes.
  const status = await fetch(`http://127.0.0.1:${port}/v1/auth/chatapp/status/lss_unknown`, { headers: { 'x-api-key': w.loginKey } });
  expect(status.status).not.toBe(503);
  expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);

  // The held requests end: bulk gets in again.
  for (const h of held) h.socket.destroy();
  await expect.poll(async () => (await fetch(`http://127.0.0.1:${port}/api/contacts?limit=1`, { headers: { 'x-api-key': w.key } })).status).toBe(200);
}, 60_000); // the first app a worker builds also compiles the contract's validators

it('while the event loop is saturated, the in-flight limit becomes the measured capacity × OVERLOAD_QUEUE_MS', async () => {
  const app = await build({ env: { OVERLOAD_QUEUE_MS: '1' } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  const w = await workspace(app);
  const head = `GET /api/contacts?limit=20 HTTP/1.1\r\nhost: x\r\nx-api-key: ${w.key}\r\n\r\n`;
  const blockFor = (ms: number) => {
    const until = performance.now() + ms;
    while (performance.now() < until); // the event loop busy, as under more load than it takes
  };
  // Connections open before the load: the requests are what arrives at once.
  const conns = Array.from({ length: 24 }, () => connect(port, '127.0.0.1'));
  sockets.push(...conns);
  await Promise.all(conns.map((socket) => new Promise((resolve) => socket.once('connect', resolve))));
  await app.inject({ url: '/no/such/path' }); // closes the guard's current window: the next one is all busy
  expect(app.overload!.limit()).toBe(256);
  blockFor(1000);
  // 24 requests written while the event loop is busy: they wait for it, then arrive at once.
  const answers = conns.map((socket) => {
    let text = '';
    const answered = new Promise<string>((resolve) => {
      socket.on('data', (chunk) => {
        text += chunk;
        if (/\r\n\r\n/.test(text) && /\}$/.test(text)) resolve(text);
      });
    });
    socket.write(head);
    return answered;
  });
  blockFor(50);
  // Before any sign of saturation nothing is refused; the guard measures meanwhile.
  expect((await Promise.all(answers)).map((a) => a.split(' ')[1])).toEqual(Array(24).fill('200'));
  expect(app.overload!.capacity()).toBeGreaterThan(0);
  // Answers per second × 1 ms (at least 16): far below the ceiling; it grows back once the loop has room.
  expect(app.overload!.limit()).toBeLessThan(24);

  // In-process requests (a seeding script's burst) meet the ceiling only, not the saturated limit.
  const injected = await Promise.all(Array.from({ length: 48 }, () => app.inject({ url: '/api/contacts?limit=1', headers: { 'x-api-key': w.key } })));
  expect(injected.map((r) => r.statusCode)).toEqual(Array(48).fill(200));
});

it('priority requests in flight take their reserve, not the room of bulk traffic', async () => {
  const app = await build({ env: { OVERLOAD_MAX_IN_FLIGHT: '2', OVERLOAD_PRIORITY_RESERVE: '2' } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  const w = await workspace(app);
  // Two token verifications in flight (a burst of priority traffic), their bodies still arriving.
  const partial = `POST /v1/auth/verify-token HTTP/1.1\r\nhost: x\r\nx-api-key: ${w.loginKey}\r\ncontent-type: application/json\r\ncontent-length: 60`;
  const held = [raw(port, partial, '{"token":'), raw(port, partial, '{"token":')];
  await expect.poll(() => app.overload!.inFlight()).toBe(2);
  // A client's bulk requests, one at a time, still get in: the bulk room is free.
  for (let i = 0; i < 3; i++) expect((await fetch(`http://127.0.0.1:${port}/api/contacts?limit=1`, { headers: { 'x-api-key': w.key } })).status).toBe(200);
  // Priority beyond limit + reserve (2 + 2) is refused: two more fill it, a fifth is refused.
  held.push(raw(port, partial, '{"token":'), raw(port, partial, '{"token":'));
  await expect.poll(() => app.overload!.inFlight()).toBe(4);
  expect((await raw(port, `${partial.replace('60', '1000')}`).answered).split('\r\n')[0]).toBe('HTTP/1.1 503 Service Unavailable');
  for (const h of held) h.socket.destroy();
}, 60_000);
