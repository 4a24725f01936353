// The order of each API's tags in its documents and on its docs page: grouped, in the order a
// user starts (Messaging: contacts, sending, the inbox, templates, campaigns, automation … the
// provider's webhook last). `npm run generate` writes the `tags` list in this order and the
// groups as `x-tagGroups` (read by Scalar, Redoc and Redocly); a tag missing here stops it.
export const TAG_GROUPS = {
  account: [{ name: 'Account', tags: ['Workspaces', 'Sessions', 'API keys'] }],
  connect: [
    { name: 'Set-up', tags: ['Clients', 'OAuth', 'Grants', 'Client registration'] },
    { name: 'Content', tags: ['Documents', 'Links', 'Analytics'] },
    { name: 'Events', tags: ['Webhook endpoints', 'Client webhook endpoints', 'Connect events'] },
  ],
  login: [
    { name: 'Set-up', tags: ['Login apps'] },
    { name: 'Sign-in', tags: ['Login sessions', 'Verification tokens', 'OpenID Connect'] },
    { name: 'Events', tags: ['Hosted webhook', 'Login events'] },
  ],
  messaging: [
    { name: 'Contacts and conversations', tags: ['Contacts', 'Messages', 'Inbox'] },
    { name: 'Templates and campaigns', tags: ['Templates', 'Campaigns'] },
    {
      name: 'Automation',
      tags: ['Automation', 'Chatbots', 'Message bots', 'Quick replies', 'Forms', 'Sequences', 'Kanban funnels', 'Agents'],
    },
    { name: 'Commerce', tags: ['Catalogs', 'Order webhooks'] },
    { name: 'Account and set-up', tags: ['Configuration', 'Industry packs', 'Google', 'Usage'] },
    { name: 'Events', tags: ['Webhook endpoints', 'Messaging events', 'Provider webhook'] },
  ],
};

/** Orders `doc.tags` by the API's groups and writes `x-tagGroups`; refuses a tag not placed here. */
export function orderTags(doc, apiName) {
  const groups = TAG_GROUPS[apiName];
  const order = groups.flatMap((g) => g.tags);
  const byName = new Map((doc.tags ?? []).map((t) => [t.name, t]));
  const used = new Set();
  const methods = ['get', 'put', 'post', 'delete', 'patch'];
  for (const item of [...Object.values(doc.paths ?? {}), ...Object.values(doc.webhooks ?? {})]) {
    for (const m of methods) for (const tag of item[m]?.tags ?? []) used.add(tag);
  }
  const unplaced = [...new Set([...byName.keys(), ...used])].filter((t) => !order.includes(t));
  if (unplaced.length) throw new Error(`${apiName}: tag(s) ${unplaced.join(', ')} in no group of scripts/lib/tag-groups.mjs`);
  const present = (t) => byName.has(t) || used.has(t);
  doc.tags = order.filter(present).map((name) => byName.get(name) ?? { name });
  doc['x-tagGroups'] = groups.map((g) => ({ name: g.name, tags: g.tags.filter(present) })).filter((g) => g.tags.length);
}
