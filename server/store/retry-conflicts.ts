// PostgreSQL breaks a deadlock by aborting one of the transactions in it (40P01) and refuses a
// serializable transaction that lost a conflict (40001). Both roll back completely, so running
// the transaction again is safe and is what PostgreSQL's manual asks of the client.

const RETRYABLE = new Set(['40P01', '40001']);

export function isRetryableConflict(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && RETRYABLE.has(code);
}

/** Runs `transaction` (a whole transaction, side effects deferred to its commit) up to `attempts` times. */
export async function retryConflicts<T>(transaction: () => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await transaction();
    } catch (error) {
      if (attempt >= attempts || !isRetryableConflict(error)) throw error;
      // A short random pause, so the two sides do not meet again in the same order.
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 20 * attempt));
    }
  }
}
