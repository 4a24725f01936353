// A store whose notifications can be lost, as they are while a LISTEN connection reconnects:
// `cut()` drops every notification this instance would get (and counts them), `reconnect()` ends
// the cut and tells the `onReconnect` callbacks, as the real LISTEN connection does when it is back.
import type { Store } from '../../server/store/db.js';

export interface LossyStore extends Store {
  cut(): void;
  reconnect(): void;
  /** Notifications dropped so far. */
  readonly dropped: number;
}

export function lossyStore(store: Store): LossyStore {
  let down = false;
  let dropped = 0;
  const callbacks = new Set<() => void>();
  const fire = () => {
    for (const callback of [...callbacks]) callback();
  };
  store.onReconnect(fire);
  return {
    ...store,
    listen: (channel, listener) =>
      store.listen(channel, (payload) => {
        if (down) dropped++;
        else listener(payload);
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
    get dropped() {
      return dropped;
    },
  };
}
