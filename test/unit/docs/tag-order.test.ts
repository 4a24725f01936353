// The docs pages list each API's tags grouped and in the order a user starts
// (scripts/lib/tag-groups.mjs): the documents' `tags` in that order, and `x-tagGroups` for the
// renderer, in the dereferenced document the docs page (Scalar) loads as well.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

type Doc = { tags: { name: string }[]; 'x-tagGroups': { name: string; tags: string[] }[]; paths: Record<string, any>; webhooks?: Record<string, any> };
const file = (api: string, name: string) => readFileSync(new URL(`../../../generated/${api}/${name}`, import.meta.url), 'utf8');
const documents = (api: string): [string, Doc][] => [
  ['3.0', parse(file(api, 'openapi.3.0.yaml'))],
  ['3.1', parse(file(api, 'openapi.3.1.yaml'))],
  ['3.1 dereferenced', JSON.parse(file(api, 'openapi.3.1.dereferenced.json'))],
];
const names = (doc: Doc) => doc.tags.map((t) => t.name);

describe.each(['account', 'connect', 'login', 'messaging'])('%s tags', (api) => {
  it.each(documents(api))('%s: tags in the order of x-tagGroups, every operation in a group', (_version, doc) => {
    expect(names(doc)).toEqual(doc['x-tagGroups'].flatMap((g) => g.tags));
    const used = [...Object.values(doc.paths), ...Object.values(doc.webhooks ?? {})].flatMap((item) =>
      ['get', 'put', 'post', 'delete', 'patch'].flatMap((m) => item[m]?.tags ?? []),
    );
    expect(used.filter((t: string) => !names(doc).includes(t))).toEqual([]);
  });
});

describe('Messaging tags in the order a user starts', () => {
  it.each(documents('messaging'))('%s: contacts, sending, inbox, templates, campaigns, automation … the provider webhook last', (_version, doc) => {
    const order = names(doc);
    expect(order.slice(0, 6)).toEqual(['Contacts', 'Messages', 'Inbox', 'Templates', 'Campaigns', 'Automation']);
    expect(order.at(-1)).toBe('Provider webhook');
  });

  it('Connect and Login start with set-up and end with their events', () => {
    const [, connect] = documents('connect')[1]!;
    const [, login] = documents('login')[1]!;
    expect(names(connect)[0]).toBe('Clients');
    expect(names(connect).at(-1)).toBe('Connect events');
    expect(names(login)[0]).toBe('Login apps');
    expect(names(login).at(-1)).toBe('Login events');
  });
});
