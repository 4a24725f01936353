// Validates answers against the generated 3.1 document with openapi-backend and Ajv 2020.
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { OpenAPIBackend } from 'openapi-backend';
import { loadDocument } from './cases.js';
import type { Answer } from './http.js';

const backends = new Map<string, Promise<OpenAPIBackend>>();

function backend(api: string): Promise<OpenAPIBackend> {
  let ready = backends.get(api);
  if (!ready) {
    const instance = new OpenAPIBackend({
      definition: loadDocument(api),
      quick: true,
      validate: true,
      customizeAjv: () => {
        const ajv = new Ajv2020.default({ strict: false, allErrors: true });
        addFormats.default(ajv);
        return ajv as never;
      },
    });
    ready = instance.init().then(() => instance);
    backends.set(api, ready);
  }
  return ready;
}

/** Returns what breaks the contract in an answer (empty when it conforms). */
export async function contractViolations(api: string, operationId: string, answer: Answer): Promise<string[]> {
  const api31 = await backend(api);
  const op = api31.getOperation(operationId);
  if (!op) return [`${operationId} is not in the ${api} document`];
  const declared = op.responses?.[String(answer.status)] as { content?: Record<string, unknown>; headers?: Record<string, unknown> } | undefined;
  if (!declared) return [`status ${answer.status} is not declared for ${operationId} (body: ${answer.text.slice(0, 300)})`];
  const violations: string[] = [];
  const types = Object.keys(declared.content ?? {});
  if (types.length && !types.includes(answer.contentType) && !types.includes('*/*'))
    violations.push(`content-type ${answer.contentType || '(none)'} is not one of ${types.join(', ')}`);
  if (types.length && /json/.test(answer.contentType)) {
    const result = api31.validateResponse(answer.body, operationId, answer.status);
    for (const e of result.errors ?? []) violations.push(`body${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`);
  }
  const headerResult = api31.validateResponseHeaders(typedHeaders(declared.headers, answer.headers), operationId, {
    statusCode: answer.status,
    setMatchType: 'superset' as never,
  });
  for (const e of headerResult.errors ?? []) violations.push(`headers${e.instancePath} ${e.message}`);
  return violations;
}

/** Header values arrive as strings: read numeric ones as numbers where the document says so. */
function typedHeaders(declared: Record<string, unknown> | undefined, headers: Record<string, string>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...headers };
  for (const [name, spec] of Object.entries(declared ?? {})) {
    const type = (spec as { schema?: { type?: string } }).schema?.type;
    const key = name.toLowerCase();
    if ((type === 'integer' || type === 'number') && out[key] !== undefined && /^-?\d+(\.\d+)?$/.test(String(out[key]))) {
      out[key] = Number(out[key]);
    }
  }
  return out;
}
