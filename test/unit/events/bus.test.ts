// The event bus: subscribers see events published by any instance on the same database, events
// published in a transaction arrive only if it commits.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventBus, type PlatformEvent } from '#server/events/bus.js';
import { openStore, type Store } from '#server/store/db.js';
import { onPostgres, openTestStore } from '#test/support/store.js';
import { elapse, eventually } from '#test/support/eventually.js';

let store: Store & { url?: string };
let second: Store | undefined;
let a: EventBus;
let b: EventBus;

beforeAll(async () => {
  store = await openTestStore();
  // A second instance: on PostgreSQL its own connection pool to the same database; on PGlite
  // (one process, one database) the same store.
  second = onPostgres ? await openStore({ databaseUrl: store.url }) : undefined;
  a = new EventBus(store);
  b = new EventBus(second ?? store);
  await a.start();
  await b.start();
}, 60_000);

afterAll(async () => {
  await a?.stop();
  await b?.stop();
  await second?.close();
  await store?.close();
});

const until = (check: () => boolean, ms = 2000) => eventually(check, { within: ms, every: 10 }).catch(() => {});

describe(`event bus (${onPostgres ? 'two instances on PostgreSQL' : 'PGlite'})`, () => {
  it('delivers an event to subscribers of every instance, the publisher’s included', async () => {
    const seenA: PlatformEvent[] = [];
    const seenB: PlatformEvent[] = [];
    const offA = a.subscribe('login.verified', (e) => void seenA.push(e));
    const offB = b.subscribe('*', (e) => void seenB.push(e));
    await a.publish({ type: 'login.verified', workspaceId: 'ws_bus000000001', data: { sessionId: 'ls_1' } });
    await until(() => seenA.length === 1 && seenB.length === 1);
    offA();
    offB();
    expect(seenA).toEqual([{ type: 'login.verified', workspaceId: 'ws_bus000000001', data: { sessionId: 'ls_1' } }]);
    expect(seenB).toHaveLength(1);
  });

  it('delivers events published in a transaction at commit, and never after a rollback', async () => {
    const seen: string[] = [];
    const off = b.subscribe('*', (e) => void seen.push(String(e.data.n)));
    await store.db.transaction().execute(async (tx) => {
      await a.publish({ type: 't', workspaceId: 'ws_bus000000001', data: { n: 1 } }, tx);
      expect(seen).toEqual([]);
    });
    await store.db
      .transaction()
      .execute(async (tx) => {
        await a.publish({ type: 't', workspaceId: 'ws_bus000000001', data: { n: 2 } }, tx);
        throw new Error('rollback');
      })
      .catch(() => {});
    await until(() => seen.length >= 1);
    await elapse(100, 'absence: the rolled-back event would have arrived by then');
    off();
    expect(seen).toEqual(['1']);
  });

  it('refuses an event too large for NOTIFY', async () => {
    await expect(a.publish({ type: 'big', workspaceId: 'ws_bus000000001', data: { blob: 'x'.repeat(9000) } })).rejects.toThrow(/too large/);
  });

  it('starts a background subscriber after the others: on the embedded store, after their chains of queries', async () => {
    const order: string[] = [];
    // Subscribed first, so it is not registration order that puts it last.
    const offBackground = a.subscribe('t3', () => void order.push('background'), { background: true });
    const offWaited = a.subscribe('t3', async () => {
      order.push('waited');
      for (let i = 1; i <= 5; i++) {
        await store.db.selectNoFrom((eb) => eb.val(i).as('n')).execute();
        order.push(`query ${i}`);
      }
    });
    await a.publish({ type: 't3', workspaceId: 'ws_bus000000001', data: {} });
    await until(() => order.length === 7);
    offBackground();
    offWaited();
    expect(order[0]).toBe('waited');
    // On PostgreSQL each query waits on the network, and the background subscriber starts meanwhile.
    if (!onPostgres) expect(order).toEqual(['waited', 'query 1', 'query 2', 'query 3', 'query 4', 'query 5', 'background']);
    else expect(order).toContain('background');
  });

  it('does not start a background subscriber unsubscribed before its turn (a server closing)', async () => {
    const seen: string[] = [];
    let offBackground = () => {};
    // The regular subscriber runs first and unsubscribes the background one, as a shutdown would.
    const offFirst = a.subscribe('t4', () => {
      seen.push('first');
      offBackground();
    });
    offBackground = a.subscribe('t4', () => void seen.push('background'), { background: true });
    await a.publish({ type: 't4', workspaceId: 'ws_bus000000001', data: {} });
    await until(() => seen.length >= 1);
    await elapse(50, 'absence: the unsubscribed background subscriber would have run by then');
    offFirst();
    expect(seen).toEqual(['first']);
  });

  it('keeps delivering when one subscriber throws', async () => {
    const seen: number[] = [];
    const off1 = a.subscribe('t2', () => {
      throw new Error('boom');
    });
    const off2 = a.subscribe('t2', (e) => void seen.push(Number(e.data.n)));
    await a.publish({ type: 't2', workspaceId: 'ws_bus000000001', data: { n: 7 } });
    await until(() => seen.length === 1);
    off1();
    off2();
    expect(seen).toEqual([7]);
  });
});
