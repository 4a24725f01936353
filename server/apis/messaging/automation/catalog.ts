// The node-type catalogue: one table in code (kind, ports, whether the node waits), with each
// type's parameters schema taken from the contract itself (the `Flow*Parameters` components of
// generated/messaging/openapi.3.1.yaml, inlined). `GET /api/automation/node-types` serves it and
// the flow validator checks parameters against the very same schemas, so neither can drift from
// the spec or from each other.
import { createHash } from 'node:crypto';
import type { ValidateFunction } from 'ajv/dist/2020.js';
import { componentSchemas } from '#server/contract.js';
import { checker } from '#server/lib/validation.js';
import type { components } from '#generated/messaging/types.js';

export type NodeType = components['schemas']['NodeType'];
export type NodeKind = NodeType['kind'];

interface Port {
  name: string;
  description: string;
}

interface NodeTypeDef {
  type: string;
  kind: NodeKind;
  name: string;
  description: string;
  /** The contract's component holding the parameters schema. */
  model: string;
  ports: Port[];
  waits: boolean;
}

const OUT: Port[] = [{ name: 'out', description: 'Always, once the node has run.' }];

const DEFINITIONS: NodeTypeDef[] = [
  {
    type: 'message_received',
    kind: 'trigger',
    name: 'Message received',
    description: "Starts the flow on any inbound message on the flow's numbers (optionally only some message kinds, or only new contacts).",
    model: 'FlowMessageReceivedParameters',
    ports: OUT,
    waits: false,
  },
  {
    type: 'keyword',
    kind: 'trigger',
    name: 'Keyword',
    description: 'Starts the flow when an inbound text matches one of the keywords.',
    model: 'FlowKeywordParameters',
    ports: OUT,
    waits: false,
  },
  {
    type: 'button_reply',
    kind: 'trigger',
    name: 'Button reply',
    description:
      'Starts the flow when the contact clicks a button or list row with one of the given ids, or a template quick-reply button with one of the given payloads.',
    model: 'FlowButtonReplyParameters',
    ports: OUT,
    waits: false,
  },
  {
    type: 'send_text',
    kind: 'action',
    name: 'Send text',
    description: 'Sends a text message (inside the 24-hour window).',
    model: 'FlowSendTextParameters',
    ports: OUT,
    waits: false,
  },
  {
    type: 'send_media',
    kind: 'action',
    name: 'Send media',
    description: 'Sends an image, video, audio or document by public https URL.',
    model: 'FlowSendMediaParameters',
    ports: OUT,
    waits: false,
  },
  {
    type: 'send_template',
    kind: 'action',
    name: 'Send template',
    description: 'Sends an approved template; allowed outside the 24-hour window.',
    model: 'FlowSendTemplateParameters',
    ports: OUT,
    waits: false,
  },
  {
    type: 'send_buttons',
    kind: 'action',
    name: 'Send buttons',
    description: 'Sends a message with up to three reply buttons. Does not wait; follow it with ask to branch on the click.',
    model: 'FlowSendButtonsParameters',
    ports: OUT,
    waits: false,
  },
  {
    type: 'send_list',
    kind: 'action',
    name: 'Send list',
    description: 'Sends a list message. Does not wait; follow it with ask to branch on the choice.',
    model: 'FlowSendListParameters',
    ports: OUT,
    waits: false,
  },
  {
    type: 'ask',
    kind: 'action',
    name: 'Ask',
    description: 'Optionally sends a question, then waits for the reply up to a timeout, validates and stores it.',
    model: 'FlowAskParameters',
    ports: [
      { name: 'reply', description: 'The contact answered as expected.' },
      { name: 'invalid', description: 'The answers did not fit after max_retries retries.' },
      { name: 'timeout', description: 'No answer within timeout_minutes.' },
    ],
    waits: true,
  },
  {
    type: 'condition',
    kind: 'logic',
    name: 'Condition',
    description: 'Branches on contact fields, tags, the last reply or flow variables.',
    model: 'FlowConditionParameters',
    ports: [
      { name: 'true', description: 'The rules hold (all or any, per match).' },
      { name: 'false', description: 'They do not.' },
    ],
    waits: false,
  },
  {
    type: 'set_field',
    kind: 'action',
    name: 'Set field',
    description: 'Sets a contact attribute or custom field.',
    model: 'FlowSetFieldParameters',
    ports: OUT,
    waits: false,
  },
  {
    type: 'add_tag',
    kind: 'action',
    name: 'Add tag',
    description: 'Adds a tag to the contact (no change if present).',
    model: 'FlowTagParameters',
    ports: OUT,
    waits: false,
  },
  {
    type: 'remove_tag',
    kind: 'action',
    name: 'Remove tag',
    description: 'Removes a tag from the contact (no change if absent).',
    model: 'FlowTagParameters',
    ports: OUT,
    waits: false,
  },
  {
    type: 'delay',
    kind: 'logic',
    name: 'Delay',
    description: 'Pauses the run on a durable timer (at most 30 days).',
    model: 'FlowDelayParameters',
    ports: [{ name: 'out', description: 'When the delay has passed.' }],
    waits: true,
  },
  {
    type: 'http_request',
    kind: 'action',
    name: 'HTTP request',
    description: 'Calls a public https URL through the SSRF-safe client and stores the JSON response.',
    model: 'FlowHttpRequestParameters',
    ports: [
      { name: 'success', description: 'The response status was 2xx.' },
      { name: 'error', description: 'Any other status, a timeout, or a refused address.' },
    ],
    waits: false,
  },
  {
    type: 'assign_agent',
    kind: 'action',
    name: 'Assign agent',
    description: 'Assigns the chat to an agent (specific, round robin or least busy).',
    model: 'FlowAssignAgentParameters',
    ports: OUT,
    waits: false,
  },
  {
    type: 'start_form',
    kind: 'action',
    name: 'Start form',
    description: 'Sends a published form (by its flow.flow_id, not the form id) and waits for its submission.',
    model: 'FlowStartFormParameters',
    ports: [
      { name: 'submitted', description: 'The contact submitted the form.' },
      { name: 'timeout', description: 'No submission within timeout_minutes.' },
    ],
    waits: true,
  },
  { type: 'end', kind: 'logic', name: 'End', description: 'Ends the run.', model: 'FlowEndParameters', ports: [], waits: false },
];

type Schema = Record<string, unknown>;

/** A component with every `$ref` inlined, `allOf: [one]` merged, and "no unknown property" said the plain way. */
function inline(value: unknown, schemas: Record<string, Schema>, depth = 0): unknown {
  if (depth > 20) throw new Error('schema nesting too deep');
  if (Array.isArray(value)) return value.map((v) => inline(v, schemas, depth + 1));
  if (!value || typeof value !== 'object') return value;
  let node = { ...(value as Schema) };
  if (typeof node.$ref === 'string') {
    const name = node.$ref.replace('#/components/schemas/', '');
    const { $ref: _, ...rest } = node;
    node = { ...(schemas[name] as Schema), ...rest };
  }
  if (Array.isArray(node.allOf) && node.allOf.length === 1) {
    const { allOf, ...rest } = node;
    node = { ...(inline(allOf[0], schemas, depth + 1) as Schema), ...rest };
  }
  const out: Schema = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === 'unevaluatedProperties' && v && typeof v === 'object' && 'not' in v) out.additionalProperties = false;
    else
      out[k] =
        k === 'properties'
          ? Object.fromEntries(Object.entries(v as Schema).map(([p, s]) => [p, inline(s, schemas, depth + 1)]))
          : inline(v, schemas, depth + 1);
  }
  return out;
}

interface Catalogue {
  version: string;
  data: NodeType[];
  byType: Map<string, NodeTypeDef & { validate: ValidateFunction; schema: Schema }>;
}

let cached: Catalogue | undefined;

/** The catalogue, built once from the generated contract. */
export function catalogue(): Catalogue {
  if (cached) return cached;
  const schemas = componentSchemas('messaging') as Record<string, Schema>;
  const byType = new Map<string, NodeTypeDef & { validate: ValidateFunction; schema: Schema }>();
  const data: NodeType[] = [];
  for (const def of DEFINITIONS) {
    if (!schemas[def.model]) throw new Error(`the contract has no ${def.model}`);
    const schema = inline(schemas[def.model], schemas) as Schema;
    byType.set(def.type, { ...def, schema, validate: checker.compile(schema) });
    data.push({
      type: def.type,
      kind: def.kind,
      name: def.name,
      description: def.description,
      parameters_schema: schema as NodeType['parameters_schema'],
      output_ports: def.ports,
      waits: def.waits,
    });
  }
  const version = createHash('sha256').update(JSON.stringify(data)).digest('hex').slice(0, 16);
  cached = { version, data, byType };
  return cached;
}

export function nodeType(type: string) {
  return catalogue().byType.get(type);
}
