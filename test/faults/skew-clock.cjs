// Preloaded into a fault-test server (NODE_OPTIONS=--require …) to move its system clock by
// CLOCK_SKEW_MS, as on a host whose clock is off (F-12). Date.now is what the server's clock
// reads; the database keeps the true time.
const skew = Number(process.env.CLOCK_SKEW_MS || 0);
const realNow = Date.now;
Date.now = () => realNow() + skew;
