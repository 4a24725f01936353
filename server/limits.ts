/** Sizes and timeouts (README, "Limits"). */
export const LIMITS = {
  bodyBytes: 1024 * 1024,
  headerBytes: 8 * 1024, // request line and all headers; Node's default is 16 KiB
  headersMs: 10_000,
  requestMs: 30_000,
  idleMs: 60_000,
  keepAliveMs: 72_000, // above common load-balancer idle timeouts (60 s)
  checkEveryMs: 2_000, // how often Node checks those deadlines (30 s by default)
};
export type Limits = typeof LIMITS;
