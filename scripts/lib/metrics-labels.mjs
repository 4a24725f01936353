// Bounded cardinality of the Prometheus metrics (server/ops/metrics.ts): every label value must
// come from a fixed set, never from a value a client chose (a tenant id, a credential, a phone
// number, a raw URL). Used by test/unit/ops/metrics.test.ts and, after the fuzz run's traffic, by
// scripts/fuzz.mjs.

/** Every series of an exposition text: name, labels, value. */
export function parseExposition(text) {
  return text
    .split('\n')
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!match) throw new Error(`not an exposition line: ${line}`);
      const labels = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
      return { name: match[1], labels, value: Number(match[3]) };
    });
}

/** The problems of a scrape: each label value outside its fixed set (empty when all is well). */
export function labelProblems(series, operationIds) {
  const operations = new Set(operationIds);
  const word = (v) => /^[A-Za-z_]+$/.test(v);
  const allowed = {
    api: (v) => ['account', 'connect', 'login', 'messaging', 'none'].includes(v),
    // A route pattern (`/docs/:api`) is fixed by the code; no digits run long enough to be an id or a number.
    operation: (v) => operations.has(v) || v === 'unmatched' || (v.startsWith('/') && !/\d{5}|[?=@+]/.test(v)),
    method: (v) => /^[A-Z]{3,10}$/.test(v),
    status_class: (v) => /^[1-5]xx$/.test(v),
    queue: (v) => ['webhook_outbox', 'provider_inbox', 'campaign_recipients', 'automation_waits', 'automation_sequences'].includes(v),
    outcome: (v) => ['succeeded', 'retry', 'failed', 'sent'].includes(v),
    state: (v) => ['in_use', 'max'].includes(v),
    reason: (v) => ['late', 'in_flight', 'lag'].includes(v),
    le: (v) => v === '+Inf' || Number.isFinite(Number(v)),
    // prom-client's default runtime metrics
    type: word,
    kind: word,
    space: word,
    version: (v) => /^v\d+\.\d+\.\d+$/.test(v),
    major: (v) => /^\d+$/.test(v),
    minor: (v) => /^\d+$/.test(v),
    patch: (v) => /^\d+$/.test(v),
  };
  const problems = [];
  for (const s of series)
    for (const [label, value] of Object.entries(s.labels)) {
      if (!allowed[label]) problems.push(`${s.name}: unexpected label ${label}`);
      else if (!allowed[label](value)) problems.push(`${s.name}{${label}="${value}"}: a value outside the fixed set`);
    }
  return problems;
}
