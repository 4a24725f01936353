// Validation of a flow against the catalogue before it is stored (createFlow, updateFlow) and
// of what it references before it is switched on (toggleFlow). Every finding is collected and
// answered at once: 422 with `errors[]` whose pointers name the node, the connection or the
// parameter. Only URL findings alone make it a 422 `unsafe-url`.
import type { Kysely } from 'kysely';
import type { components } from '#generated/messaging/types.js';
import { HttpProblem } from '#server/lib/problems.js';
import { FetchFailedError, UnsafeUrlError } from '#server/lib/safe-fetch.js';
import type { Platform } from '#server/platform.js';
import type { Database } from '#server/store/schema.js';
import { nodeType } from './catalog.js';
import { CONTACT_ATTRIBUTES } from './contact-state.js';

type S = components['schemas'];
export type FlowTrigger = S['FlowTrigger'];
export type FlowNode = S['FlowNode'];
export type FlowConnection = S['FlowConnection'];

/** The stored graph of one flow version. */
export interface FlowGraph {
  triggers: FlowTrigger[];
  nodes: FlowNode[];
  connections: FlowConnection[];
}

export interface Finding {
  pointer: string;
  detail: string;
  unsafeUrl?: boolean;
  /** Malformed input rather than a broken rule (a URL's scheme, port, characters or length; nesting too deep): 400. */
  badInput?: boolean;
}

/** Headers an http_request node may not set (RFC 9110 hop-by-hop and framing). */
const FORBIDDEN_HEADERS = new Set([
  'host',
  'content-length',
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'proxy-authorization',
]);
const VALUE_OPERATORS = new Set(['equals', 'not_equals', 'contains', 'not_contains', 'starts_with', 'greater_than', 'less_than']);
const PLACEHOLDER = /\{\{\s*[^}]*\}\}/;

const escapePointer = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1');
const portOf = (c: FlowConnection) => c.from_port ?? 'out';

/** The structural checks: types, parameters, ids, connections, reachability and cycles. */
export function checkGraph(graph: FlowGraph): Finding[] {
  const findings: Finding[] = [];
  const where = new Map<string, { pointer: string; type: string; trigger: boolean }>();
  const add = (pointer: string, detail: string) => findings.push({ pointer, detail });

  const visit = (item: FlowTrigger | FlowNode, pointer: string, trigger: boolean) => {
    const label = `${trigger ? 'trigger' : 'node'} '${item.id}'`;
    if (where.has(item.id)) add(`${pointer}/id`, `${label}: the id is used twice in this flow`);
    else where.set(item.id, { pointer, type: item.type, trigger });
    const def = nodeType(item.type);
    if (!def) return add(`${pointer}/type`, `${label}: unknown node type '${item.type}'`);
    if (trigger && def.kind !== 'trigger') return add(`${pointer}/type`, `${label}: '${item.type}' is not a trigger type`);
    if (!trigger && def.kind === 'trigger') return add(`${pointer}/type`, `${label}: '${item.type}' is a trigger type; list it in triggers`);
    if (depthOver(item.parameters, MAX_PARAMETER_DEPTH)) {
      return findings.push({ pointer: `${pointer}/parameters`, detail: `${label}: parameters nest deeper than ${MAX_PARAMETER_DEPTH} levels`, badInput: true });
    }
    if (!def.validate(item.parameters)) {
      for (const e of def.validate.errors ?? []) {
        const missing = e.keyword === 'required' ? String((e.params as { missingProperty: string }).missingProperty) : undefined;
        const extra = e.keyword === 'additionalProperties' ? String((e.params as { additionalProperty: string }).additionalProperty) : undefined;
        const path = `${pointer}/parameters${e.instancePath}${missing ? `/${escapePointer(missing)}` : ''}${extra ? `/${escapePointer(extra)}` : ''}`;
        const detail = missing
          ? `missing required parameter '${missing}'`
          : extra
            ? `unknown parameter '${extra}'`
            : `parameter ${e.instancePath.slice(1) || '(parameters)'} ${e.message ?? 'is invalid'}`;
        // A URL parameter that breaks its schema (length, format) is a malformed URL: 400, as everywhere.
        findings.push({ pointer: path, detail: `${label}: ${detail}`, ...(/\/(url|media_url)$/.test(e.instancePath) ? { badInput: true } : {}) });
      }
      return;
    }
    findings.push(...semanticChecks(item, pointer, label));
  };
  graph.triggers.forEach((t, i) => visit(t, `/body/triggers/${i}`, true));
  graph.nodes.forEach((n, i) => visit(n, `/body/nodes/${i}`, false));

  // Connections: known ends, a declared port, never into a trigger, one edge per port.
  const used = new Set<string>();
  const edges = new Map<string, { to: string; index: number }[]>();
  graph.connections.forEach((c, i) => {
    const pointer = `/body/connections/${i}`;
    const from = where.get(c.from_node);
    const to = where.get(c.to_node);
    let ok = true;
    if (!from) (ok = false), add(`${pointer}/from_node`, `connection leaves '${c.from_node}', which is not a node of this flow`);
    if (!to) (ok = false), add(`${pointer}/to_node`, `connection from '${c.from_node}' leads to '${c.to_node}', which is not a node of this flow`);
    else if (to.trigger) (ok = false), add(`${pointer}/to_node`, `connection from '${c.from_node}' leads into trigger '${c.to_node}'; triggers have no input`);
    const def = from && nodeType(from.type);
    if (from && def && !def.ports.some((p) => p.name === portOf(c))) {
      ok = false;
      const ports = def.ports.map((p) => p.name).join(', ') || 'none';
      add(`${pointer}/from_port`, `'${c.from_node}' (${from.type}) has no port '${portOf(c)}' (ports: ${ports})`);
    }
    const key = `${c.from_node}\0${portOf(c)}`;
    if (used.has(key)) (ok = false), add(pointer, `port '${portOf(c)}' of '${c.from_node}' already has a connection`);
    used.add(key);
    if (ok) edges.set(c.from_node, [...(edges.get(c.from_node) ?? []), { to: c.to_node, index: i }]);
  });

  // Reachability from the triggers.
  const reached = new Set<string>();
  const queue = graph.triggers.map((t) => t.id);
  while (queue.length) {
    const id = queue.pop()!;
    if (reached.has(id)) continue;
    reached.add(id);
    for (const e of edges.get(id) ?? []) queue.push(e.to);
  }
  graph.nodes.forEach((n, i) => {
    if (where.get(n.id)?.pointer === `/body/nodes/${i}` && !reached.has(n.id)) add(`/body/nodes/${i}`, `node '${n.id}' is not reachable from any trigger`);
  });

  // A cycle must pass a waiting node, or a run could loop without end: look for cycles among
  // edges between non-waiting nodes and name the edge that closes each.
  const waits = (id: string) => nodeType(where.get(id)?.type ?? '')?.waits === true;
  const state = new Map<string, 1 | 2>();
  const dfs = (id: string) => {
    state.set(id, 1);
    for (const e of edges.get(id) ?? []) {
      if (waits(e.to)) continue;
      const s = state.get(e.to);
      if (s === 1)
        add(`/body/connections/${e.index}`, `the connection from '${id}' to '${e.to}' closes a cycle without a waiting node (ask, delay, start_form)`);
      else if (s === undefined) dfs(e.to);
    }
    state.set(id, 2);
  };
  for (const n of graph.nodes) if (!waits(n.id) && !state.has(n.id)) dfs(n.id);
  return findings;
}

/** Rules the schemas cannot say: which rule fields go with which subject, unique ids, header names. */
function semanticChecks(item: FlowTrigger | FlowNode, pointer: string, label: string): Finding[] {
  const out: Finding[] = [];
  const p = item.parameters as Record<string, any>;
  const at = (path: string, detail: string) => out.push({ pointer: `${pointer}/parameters${path}`, detail: `${label}: ${detail}` });
  switch (item.type) {
    case 'condition':
      (p.rules as Record<string, string>[]).forEach((r, i) => {
        const need = { contact_field: 'field', tag: 'tag_id', variable: 'variable', reply: null }[r.subject!];
        if (need && !r[need]) at(`/rules/${i}/${need}`, `rule ${i} on ${r.subject} needs '${need}'`);
        const tagOp = r.operator === 'has_tag' || r.operator === 'not_has_tag';
        if (r.subject === 'tag' && !tagOp) at(`/rules/${i}/operator`, `rule ${i} on a tag takes has_tag or not_has_tag`);
        if (r.subject !== 'tag' && tagOp) at(`/rules/${i}/operator`, `rule ${i}: ${r.operator} is for subject tag`);
        if (VALUE_OPERATORS.has(r.operator!) && r.value === undefined) at(`/rules/${i}/value`, `rule ${i}: ${r.operator} needs a value`);
        if ((r.operator === 'greater_than' || r.operator === 'less_than') && r.value !== undefined && !Number.isFinite(Number(r.value)))
          at(`/rules/${i}/value`, `rule ${i}: ${r.operator} compares numbers`);
      });
      break;
    case 'send_buttons': {
      const ids = (p.buttons as { id: string }[]).map((b) => b.id);
      ids.forEach((id, i) => ids.indexOf(id) !== i && at(`/buttons/${i}/id`, `button id '${id}' is used twice`));
      break;
    }
    case 'send_list': {
      const sections = p.sections as { title?: string; rows: { id: string }[] }[];
      const rows = sections.flatMap((s) => s.rows.map((r) => r.id));
      if (rows.length > 10) at('/sections', `a list has at most 10 rows in all (${rows.length} given)`);
      if (sections.length > 1)
        sections.forEach((s, i) => !s.title && at(`/sections/${i}/title`, 'a section title is required when there are several sections'));
      rows.forEach((id, i) => rows.indexOf(id) !== i && at('/sections', `row id '${id}' is used twice`));
      break;
    }
    case 'http_request': {
      const headers = Object.keys(p.headers ?? {});
      if (headers.length > 20) at('/headers', `at most 20 headers (${headers.length} given)`);
      for (const h of headers) {
        if (FORBIDDEN_HEADERS.has(h.toLowerCase())) at(`/headers/${escapePointer(h)}`, `header '${h}' cannot be set`);
        else if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/.test(h)) at(`/headers/${escapePointer(h)}`, `'${h}' is not a header name`);
      }
      if ((p.method === 'GET' || p.method === 'DELETE') && p.body !== undefined) at('/body', `a ${p.method} request has no body`);
      break;
    }
    case 'assign_agent':
      if ((p.strategy ?? 'round_robin') === 'specific' && !p.agent_id) at('/agent_id', "strategy 'specific' needs agent_id");
      if ((p.strategy ?? 'round_robin') !== 'specific' && p.agent_id) at('/agent_id', "agent_id goes with strategy 'specific' only");
      break;
    case 'end':
      // Chats have no resolved state in this version: refusing is honest, ignoring would not be.
      if (p.close_chat === true) at('/close_chat', 'closing the chat is not available yet (chats have no resolved state); omit close_chat');
      break;
    case 'send_media':
      if (p.media_type === 'audio' && p.caption !== undefined) at('/caption', 'audio has no caption');
      break;
  }
  return out;
}

type Db = Kysely<Database>;

/** What the flow references: templates (of the flow's account, approved when `requireApproved`), tags, agents, fields, forms, URLs. */
export async function checkReferences(
  platform: Platform,
  db: Db,
  workspaceId: string,
  accountId: string,
  graph: FlowGraph,
  requireApproved: boolean,
): Promise<Finding[]> {
  const out: Finding[] = [];
  const [tags, owners, fields, templates] = await Promise.all([
    db.selectFrom('tags').select('id').where('workspace_id', '=', workspaceId).execute(),
    db.selectFrom('owners').select('id').where('workspace_id', '=', workspaceId).execute(),
    db.selectFrom('custom_fields').select('key').where('workspace_id', '=', workspaceId).execute(),
    db.selectFrom('message_templates').select(['id', 'status', 'business_account_id']).where('workspace_id', '=', workspaceId).execute(),
  ]);
  const tagIds = new Set(tags.map((t) => t.id));
  const ownerIds = new Set(owners.map((o) => o.id));
  const fieldKeys = new Set([...CONTACT_ATTRIBUTES, ...fields.map((f) => f.key)]);
  const templateById = new Map(templates.map((t) => [t.id, t]));
  const urls: { url: string; pointer: string; label: string }[] = [];

  for (const [i, n] of graph.nodes.entries()) {
    const pointer = `/body/nodes/${i}/parameters`;
    const label = `node '${n.id}'`;
    const p = n.parameters as Record<string, any>;
    const at = (path: string, detail: string) => out.push({ pointer: `${pointer}${path}`, detail: `${label}: ${detail}` });
    const field = (path: string, key: string | undefined) =>
      key !== undefined && !fieldKeys.has(key) && at(path, `'${key}' is neither a contact attribute (name, email) nor a custom field of this workspace`);
    switch (n.type) {
      case 'send_template': {
        const t = templateById.get(p.template_id);
        if (!t || t.business_account_id !== accountId) at('/template_id', `template ${p.template_id} is not a template of the flow's business account`);
        else if (requireApproved && t.status !== 'APPROVED') at('/template_id', `template ${p.template_id} is not approved (status ${t.status})`);
        if (p.header_media_url) urls.push({ url: p.header_media_url, pointer: `${pointer}/header_media_url`, label });
        break;
      }
      case 'add_tag':
      case 'remove_tag':
        if (!tagIds.has(p.tag_id)) at('/tag_id', `tag ${p.tag_id} does not exist in this workspace`);
        break;
      case 'assign_agent':
        if (p.agent_id && !ownerIds.has(p.agent_id)) at('/agent_id', `agent ${p.agent_id} does not exist in this workspace`);
        break;
      case 'set_field':
        field('/field', p.field);
        break;
      case 'ask':
        field('/save_to_field', p.save_to_field);
        break;
      case 'condition':
        (p.rules as Record<string, string>[]).forEach((r, k) => {
          if (r.subject === 'tag' && r.tag_id && !tagIds.has(r.tag_id)) at(`/rules/${k}/tag_id`, `tag ${r.tag_id} does not exist in this workspace`);
          if (r.subject === 'contact_field') field(`/rules/${k}/field`, r.field);
        });
        break;
      case 'send_media':
        urls.push({ url: p.url, pointer: `${pointer}/url`, label });
        break;
      case 'http_request':
        urls.push({ url: p.url, pointer: `${pointer}/url`, label });
        break;
      case 'start_form': {
        const form = await db
          .selectFrom('forms')
          .select(['id', 'flow_status'])
          .where('workspace_id', '=', workspaceId)
          .where('provider_flow_id', '=', p.flow_id)
          .executeTakeFirst();
        if (!form) at('/flow_id', `no form of this workspace has flow.flow_id ${p.flow_id}`);
        else if (requireApproved && form.flow_status !== 'PUBLISHED') at('/flow_id', `the form ${form.id} is not published (status ${form.flow_status})`);
        break;
      }
    }
  }
  for (const u of urls) {
    // A URL with placeholders is only known when the node runs; it is checked then.
    if (PLACEHOLDER.test(u.url)) continue;
    try {
      // Syntax first (400), then the target (422): https only in production, as the platform's
      // clients (development receivers are http).
      await platform.mediaFetch.check(u.url);
      if (platform.config.production && new URL(u.url).protocol !== 'https:') throw new UnsafeUrlError(422, 'only https URLs are allowed');
    } catch (error) {
      if (error instanceof FetchFailedError) continue; // a name we cannot resolve now may resolve later
      if (error instanceof UnsafeUrlError && error.status === 422) {
        out.push({ pointer: u.pointer, detail: `${u.label}: the URL is not a public https target (${error.reason})`, unsafeUrl: true });
      } else {
        const reason = error instanceof UnsafeUrlError ? error.reason : 'not a valid URL';
        out.push({ pointer: u.pointer, detail: `${u.label}: ${reason}`, badInput: true });
      }
    }
  }
  return out;
}

/** A form id where the provider's flow id belongs gets its own message (the schema's pattern alone would be cryptic). */
export function formIdHints(graph: FlowGraph): Finding[] {
  return graph.nodes.flatMap((n, i) => {
    const flowId = (n.parameters as { flow_id?: unknown }).flow_id;
    return n.type === 'start_form' && typeof flowId === 'string' && flowId.startsWith('form_')
      ? [{ pointer: `/body/nodes/${i}/parameters/flow_id`, detail: `node '${n.id}': ${flowId} is a form id; use the form's flow.flow_id (digits) instead` }]
      : [];
  });
}

/** Node parameters are small objects; anything deeper is refused before it is walked further. */
const MAX_PARAMETER_DEPTH = 32;

function depthOver(value: unknown, max: number): boolean {
  // Iterative, so that 10,000 levels cannot overflow the stack (bad-inputs H7).
  let level: unknown[] = [value];
  for (let depth = 0; level.length; depth++) {
    if (depth > max) return true;
    level = level.flatMap((v) => (v !== null && typeof v === 'object' ? Object.values(v) : []));
  }
  return false;
}

export function invalidFlow(findings: Finding[], title = 'Invalid flow'): HttpProblem {
  const errors = findings.map(({ pointer, detail }) => ({ pointer, detail }));
  const badInputs = findings.filter((f) => f.badInput);
  if (badInputs.length) {
    return new HttpProblem(400, 'validation', badInputs.length === 1 ? badInputs[0]!.detail : 'Inputs of the flow are malformed.', {
      errors: badInputs.map(({ pointer, detail }) => ({ pointer, detail })),
    });
  }
  if (findings.every((f) => f.unsafeUrl)) {
    return new HttpProblem(422, 'unsafe-url', findings.length === 1 ? findings[0]!.detail : 'URLs of the flow are not public https targets.', { errors });
  }
  return new HttpProblem(422, 'unprocessable', findings.length === 1 ? findings[0]!.detail : 'The flow does not satisfy the node-type catalogue.', {
    title,
    errors,
  });
}
