// Plans and their limits, as data: the code is stored on the workspace (`workspaces.plan`).
// Login sessions are capped per workspace (`workspaces.login_session_cap`, what the Login API
// enforces with 402 plan-limit), so that limit is read from the workspace, not from here.

export interface Plan {
  code: string;
  name: string;
  /** Messages sent per calendar month (UTC); null: unlimited. */
  messagesPerMonth: number | null;
  /** Contacts stored at any time; null: unlimited. */
  contacts: number | null;
}

export const PLANS: Record<string, Plan> = {
  free: { code: 'free', name: 'Free', messagesPerMonth: 1_000, contacts: 1_000 },
  starter: { code: 'starter', name: 'Starter', messagesPerMonth: 10_000, contacts: 5_000 },
  growth: { code: 'growth', name: 'Growth', messagesPerMonth: 100_000, contacts: 50_000 },
  enterprise: { code: 'enterprise', name: 'Enterprise', messagesPerMonth: null, contacts: null },
};

/** The plan of a stored code; a code this build does not know gets the free plan's limits. */
export function planOf(code: string): Plan {
  return PLANS[code] ?? { ...PLANS.free, code, name: code };
}

/** The calendar month (UTC) holding `now`: the billing period counters reset at. */
export function billingPeriod(now: Date): { start: Date; end: Date } {
  return {
    start: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)),
    end: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)),
  };
}
