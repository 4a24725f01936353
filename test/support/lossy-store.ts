// A store whose notifications can be lost, as they are while a LISTEN connection reconnects:
// `cut()` drops every notification this instance would get (and counts them), `reconnect()` ends
// the cut and tells the `onReconnect` callbacks, as the real LISTEN connection does when it is back.
import type { Store } from '#server/store/db.js';

export interface LossyStore extends Store {
  cut(): void;
  reconnect(): void;
  /** Ends the cut without telling the callbacks (a test's set-up, not a fault). */
  heal(): void;
  /** Notifications dropped so far. */
  readonly dropped: number;
  /** Resolves once a dropped notification's `channel:payload` contains `needle` (5 s at most). */
  droppedWith(needle: string): Promise<void>;
}

export function lossyStore(store: Store): LossyStore {
  let down = false;
  const dropped: string[] = [];
  let arrived = () => {};
  const callbacks = new Set<() => void>();
  const fire = () => {
    for (const callback of [...callbacks]) callback();
  };
  store.onReconnect(fire);
  return {
    ...store,
    listen: (channel, listener) =>
      store.listen(channel, (payload) => {
        if (!down) return listener(payload);
        dropped.push(`${channel}:${payload}`);
        arrived();
      }),
    onReconnect(callback) {
      callbacks.add(callback);
      return () => callbacks.delete(callback);
    },
    cut() {
      down = true;
    },
    reconnect() {
      down = false;
      fire();
    },
    heal() {
      down = false;
    },
    get dropped() {
      return dropped.length;
    },
    // On PostgreSQL a notification comes over its own connection some time after the commit.
    async droppedWith(needle) {
      const end = Date.now() + 5_000;
      while (!dropped.some((d) => d.includes(needle))) {
        if (Date.now() > end) throw new Error(`no dropped notification with ${needle}`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 50);
          arrived = () => (clearTimeout(timer), resolve());
        });
      }
    },
  };
}
