// The pure half of `npm run api:changelog` / `api:breaking` (scripts/api-diff.mjs): which
// revisions are compared, and how oasdiff's JSON findings read in CHANGELOG.md.

/**
 * The surface we keep compatible with while no release tag exists: the documents as the three
 * APIs were completed (every operation implemented), before issue 10 put the first clients, docs
 * and mock in users' hands. Tag a release (v0.1.0) and every comparison moves to the tag.
 */
// The contract as first published with the generated clients: the Connect token and revoke
// bodies were reshaped for the generators just before (27f4549), which oasdiff counts as
// breaking although `OAuthGrantType | string` and `string` accept the same values.
export const BASELINE = { ref: '27f454921b7537878c5aeca364b43cd66317f51a', label: 'baseline 27f4549 (the contract as first published with the clients)' };

/** Release tags (v1.2.3, v1.2.3-rc.1) in version order, oldest first; other tags are ignored. */
export function releaseTags(tags) {
  const parts = (t) =>
    t
      .slice(1)
      .split(/[.-]/)
      .map((p) => (/^\d+$/.test(p) ? Number(p) : p));
  const cmp = (a, b) => {
    const [pa, pb] = [parts(a), parts(b)];
    for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
      const [x, y] = [pa[i], pb[i]];
      if (x === y) continue;
      // 1.0.0 comes after 1.0.0-rc.1: a missing pre-release part ranks higher.
      if (x === undefined) return i >= 3 ? 1 : -1;
      if (y === undefined) return i >= 3 ? -1 : 1;
      if (typeof x === typeof y) return x < y ? -1 : 1;
      return typeof x === 'number' ? -1 : 1;
    }
    return 0;
  };
  return tags.filter((t) => /^v\d+\.\d+\.\d+(-[0-9A-Za-z.]+)?$/.test(t)).sort(cmp);
}

/** The sections of the changelog, newest first: the working tree against the last release, then each release against the one before. */
export function sections(tags) {
  const releases = releaseTags(tags);
  const points = [{ ref: BASELINE.ref, label: BASELINE.label }, ...releases.map((t) => ({ ref: t, label: t }))];
  const out = [{ title: 'Unreleased', base: points.at(-1), revision: null }];
  for (let i = points.length - 1; i >= 1; i--) out.push({ title: points[i].label, base: points[i - 1], revision: points[i] });
  return out;
}

const LEVELS = { 3: 'breaking', 2: 'warning', 1: 'info' };

/** Markdown for one API's findings (oasdiff `changelog -f json`), grouped by endpoint, breaking first. */
export function renderApi(api, findings, { newApi = false } = {}) {
  if (newApi) return `### ${api}\n\nNew API: the whole document is new.\n`;
  if (!findings.length) return `### ${api}\n\nNo change to the API surface.\n`;
  const groups = new Map();
  for (const f of findings) {
    const key = f.path ? `${f.operation ?? ''} ${f.path}`.trim() : f.section === 'components' ? 'Components' : 'Document';
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(f);
  }
  const breaking = findings.filter((f) => f.level >= 3).length;
  const lines = [`### ${api}`, '', `${findings.length} change(s), ${breaking} breaking.`, ''];
  for (const [key, list] of [...groups].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    lines.push(`- \`${key}\``);
    for (const f of [...list].sort((a, b) => b.level - a.level)) {
      const tag = f.level >= 3 ? '**breaking**: ' : f.level === 2 ? '*warning*: ' : '';
      lines.push(`  - ${tag}${f.text}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

/** One line per breaking finding, for the check's output. */
export function breakingLines(api, findings) {
  return findings.filter((f) => f.level >= 3).map((f) => `${api}: ${f.operation ?? ''} ${f.path ?? f.section ?? ''}: ${f.text} [${f.id}]`.replace(/\s+/g, ' '));
}

export { LEVELS };
