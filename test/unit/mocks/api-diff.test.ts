// The API changelog and breaking check (scripts/api-diff.mjs): which revisions are compared, how
// findings read, and (where oasdiff is installed in .tools/) a real diff of two small documents.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BASELINE, breakingLines, releaseTags, renderApi, sections } from '../../../scripts/lib/api-diff.mjs';

describe('revisions compared', () => {
  it('release tags in version order, pre-releases before their release, other tags ignored', () => {
    expect(releaseTags(['v1.10.0', 'v1.2.0', 'latest', 'v1.2.0-rc.1', 'v0.9.1', 'vnext', 'v2.0.0-beta'])).toEqual([
      'v0.9.1',
      'v1.2.0-rc.1',
      'v1.2.0',
      'v1.10.0',
      'v2.0.0-beta',
    ]);
  });

  it('no release tag: one Unreleased section against the baseline commit', () => {
    expect(sections([])).toEqual([{ title: 'Unreleased', base: BASELINE, revision: null }]);
    expect(BASELINE.ref).toMatch(/^[0-9a-f]{40}$/);
  });

  it('with releases: Unreleased against the last, each release against the one before, the first against the baseline', () => {
    expect(sections(['v0.2.0', 'v0.1.0']).map((s) => [s.title, s.base.label])).toEqual([
      ['Unreleased', 'v0.2.0'],
      ['v0.2.0', 'v0.1.0'],
      ['v0.1.0', BASELINE.label],
    ]);
  });
});

const findings = [
  { id: 'response-header-added', text: 'the response header `ratelimit-limit` was added', level: 1, operation: 'GET', path: '/api/contacts', section: 'paths' },
  {
    id: 'api-path-removed-without-deprecation',
    text: 'api path removed without deprecation',
    level: 3,
    operation: 'DELETE',
    path: '/api/contacts/{id}',
    section: 'paths',
  },
  {
    id: 'response-property-became-optional',
    text: 'the response property `name` became optional',
    level: 2,
    operation: 'GET',
    path: '/api/contacts',
    section: 'paths',
  },
];

describe('rendering', () => {
  it('groups by endpoint, counts the breaking ones and marks them first', () => {
    const md = renderApi('messaging', findings);
    expect(md).toContain('### messaging\n\n3 change(s), 1 breaking.');
    expect(md).toContain('- `DELETE /api/contacts/{id}`\n  - **breaking**: api path removed without deprecation');
    expect(md).toContain(
      '- `GET /api/contacts`\n  - *warning*: the response property `name` became optional\n  - the response header `ratelimit-limit` was added',
    );
  });

  it('no change and a new API say so', () => {
    expect(renderApi('login', [])).toContain('No change to the API surface.');
    expect(renderApi('login', [], { newApi: true })).toContain('New API');
  });

  it('the breaking check lists only level 3 (oasdiff ERR)', () => {
    expect(breakingLines('messaging', findings)).toEqual([
      'messaging: DELETE /api/contacts/{id}: api path removed without deprecation [api-path-removed-without-deprecation]',
    ]);
  });
});

const oasdiff = join(process.cwd(), '.tools', 'oasdiff');
const dir = mkdtempSync(join(tmpdir(), 'api-diff-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.skipIf(!existsSync(oasdiff))('oasdiff on two documents', () => {
  const doc = (paths: Record<string, unknown>) => ({ openapi: '3.1.0', info: { title: 't', version: '1' }, paths });
  const op = (id: string) => ({ get: { operationId: id, responses: { '200': { description: 'ok' } } } });

  it('a removed operation is breaking, an added one is not', () => {
    writeFileSync(join(dir, 'base.json'), JSON.stringify(doc({ '/a': op('a'), '/b': op('b') })));
    writeFileSync(join(dir, 'rev.json'), JSON.stringify(doc({ '/a': op('a'), '/c': op('c') })));
    const out = JSON.parse(
      execFileSync(oasdiff, ['changelog', join(dir, 'base.json'), join(dir, 'rev.json'), '--allow-external-refs=false', '-f', 'json'], { encoding: 'utf8' }),
    );
    const lines = breakingLines('t', out);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/GET \/b/);
    expect(renderApi('t', out)).toMatch(/`GET \/c`/);
  });
});
