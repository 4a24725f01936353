// The front each Prism mock sits behind (mocks/mocks.mjs). It passes bytes through, except:
// - `Prefer: example=<name>` without `code=`: Prism looks for the name only among the success
//   answers, so the front adds the status of the one response that has an example of that name
//   (unknown or ambiguous names go through unchanged, and Prism answers 404 naming them);
// - a request Prism finds invalid: Prism answers with the first example of the operation's 422
//   (or 400), whatever it is about, and whatever status Prefer asked for; the front answers what
//   the server answers instead, a 400 `validation` problem with one entry per invalid input.
//   Unless Prefer asks for a 400, 415 or 422: a deliberately bad request gets the example named;
// - a JSON body of a union with a discriminator (`messageType` of a send) and no example asked
//   for: the answer is the success example of the first request example of that kind (a text
//   send answers a text message, not the first example of all);
// - credentials on a public operation (sign-up, sign-in): dropped, as the server ignores them,
//   rather than answered with Prism's own 401.
import http from 'node:http';

const MAX_BUFFERED = 1024 * 1024;

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];

/**
 * The operations of a document with a matcher each; literal segments win over parameters, as
 * they do in the server's router (`/api/contacts/search` before `/api/contacts/{id}`).
 * @param {any} doc an OpenAPI 3.1 document
 */
export function operationIndex(doc) {
  const routes = [];
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    const pattern = new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}/?$`);
    const specificity = path.split('/').map((segment) => (segment.startsWith('{') ? '0' : '1'));
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const statuses = new Map();
      for (const [status, response] of Object.entries(op.responses ?? {})) {
        for (const media of Object.values(response.content ?? {})) {
          for (const name of Object.keys(media.examples ?? {})) statuses.set(name, [...(statuses.get(name) ?? []), status]);
        }
      }
      const security = op.security ?? doc.security ?? [];
      const isPublic = security.length === 0 || security.some((requirement) => Object.keys(requirement).length === 0);
      const json = op.requestBody?.content?.['application/json'];
      const discriminator = resolve(doc, json?.schema)?.discriminator?.propertyName;
      const requestExamples = discriminator ? Object.entries(json.examples ?? {}).map(([name, example]) => [name, example?.value]) : [];
      routes.push({ method: method.toUpperCase(), pattern, specificity: specificity.join(''), statuses, isPublic, discriminator, requestExamples });
    }
  }
  routes.sort((a, b) => (a.specificity < b.specificity ? 1 : a.specificity > b.specificity ? -1 : 0));
  return (method, path) => routes.find((r) => r.method === method && r.pattern.test(path));
}

/** A schema with its `$ref` followed (one level: the request body's schema). */
function resolve(doc, schema) {
  const ref = schema?.$ref;
  if (typeof ref !== 'string' || !ref.startsWith('#/')) return schema;
  return ref
    .slice(2)
    .split('/')
    .reduce((node, key) => node?.[key], doc);
}

/**
 * For a body of a discriminated union, the Prefer header naming the success example of the
 * first request example of the body's kind (undefined when none fits or one was asked for).
 */
export function preferForBody(prefer, route, body) {
  if (!route?.discriminator || /(^|[,\s])example\s*=/.test(prefer ?? '')) return undefined;
  const kind = body && typeof body === 'object' ? body[route.discriminator] : undefined;
  if (kind === undefined) return undefined;
  for (const [name, value] of route.requestExamples) {
    if (value?.[route.discriminator] !== kind) continue;
    const success = (route.statuses.get(name) ?? []).find((status) => /^2\d\d$/.test(status));
    if (success) return `example=${name}, code=${success}`;
  }
  return undefined;
}

/** The Prefer header with `code=` added when it names a unique example of the operation. */
export function preferWithCode(prefer, route) {
  if (!prefer || !route || /(^|[,\s])code\s*=/.test(prefer)) return prefer;
  const name = /(?:^|[,\s])example\s*=\s*"?([^",\s]+)/.exec(prefer)?.[1];
  const statuses = name ? [...new Set(route.statuses.get(name) ?? [])] : [];
  return statuses.length === 1 ? `${prefer}, code=${statuses[0]}` : prefer;
}

/** Whether a Prefer header asks for the answer to a bad request (the contract suite's bad examples). */
const asksForInvalid = (prefer) => /(^|[,\s])code\s*=\s*"?(400|415|422)\b/.test(prefer ?? '');

/**
 * The server's answer to an invalid request, from Prism's `sl-violations`: `/body/contact_no`
 * "is required" as server/lib/validation.ts words it. Undefined when no request part failed.
 */
export function validationProblem(header, path) {
  const invalid = meantBranch(violations(header).filter((v) => v?.location?.[0] === 'request' && v.severity === 'Error'));
  if (!invalid.length) return undefined;
  const seen = new Set();
  const errors = invalid
    .map((v) => {
      const [, part = 'body', ...rest] = v.location.map(String);
      const missing = /must have required property '([^']+)'/.exec(v.message ?? '')?.[1];
      const unknown = /must NOT have (?:additional|unevaluated) properties/.test(v.message ?? '')
        ? /(?:property|found) '([^']+)'/.exec(v.message)?.[1]
        : undefined;
      const tokens = [part === 'headers' ? 'header' : part, ...rest, ...(missing ? [missing] : []), ...(unknown ? [unknown] : [])];
      const detail = missing
        ? 'is required'
        : unknown
          ? 'is not a known field'
          : String(v.message ?? 'is invalid').replace(/^Request (body( property \S+)?|(path|query|header) parameter \S+) /i, '');
      return { pointer: `/${tokens.map((t) => t.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`, detail };
    })
    .filter((e) => {
      const key = `${e.pointer}\0${e.detail}`;
      return !seen.has(key) && seen.add(key);
    });
  return {
    type: 'https://chatapp.example/problems/validation',
    title: 'Invalid request',
    status: 400,
    detail: 'One or more inputs are invalid; see errors.',
    instance: path,
    errors,
  };
}

/**
 * Prism's `sl-violations` header: a JSON list, or past some length `Too many violations! ` and a
 * list cut short, of which every whole entry is read.
 */
export function violations(header) {
  if (!header) return [];
  const text = header.slice(Math.max(0, header.indexOf('[')));
  try {
    const list = JSON.parse(text);
    return Array.isArray(list) ? list : [];
  } catch {
    const whole = text.match(/\{"location":\[[^\]]*\],"severity":"\w+","code":"[^"]*","message":"(?:[^"\\]|\\.)*"\}/g) ?? [];
    return whole.flatMap((entry) => {
      try {
        return [JSON.parse(entry)];
      } catch {
        return [];
      }
    });
  }
}

/**
 * A union's errors as the server lists them (server/lib/validation.ts): Prism reports every
 * branch, each ending with the refusal of its kind (`messageType must be equal to … image`).
 * What every branch reports is what the client got wrong whichever kind it meant; without
 * branches, every entry.
 */
function meantBranch(list) {
  const key = (v) => `${v.location.join('/')}\0${v.message}`;
  const kind = (v) => (v.code === 'enum' || v.code === 'const') && v.location.length > 2;
  const branches = [[]];
  for (const v of list) {
    branches.at(-1).push(v);
    if (kind(v)) branches.push([]);
  }
  // A last branch without its refusal is cut short (the header's length) or the branch meant: left out.
  const whole = branches.filter((branch) => branch.length && kind(branch.at(-1)));
  if (whole.length < 2) return list;
  const common = list.filter((v) => !kind(v) && whole.every((branch) => branch.some((other) => key(other) === key(v))));
  return common.length ? common : list;
}

/**
 * An HTTP server that forwards to the Prism mock at `prismPort` as described above.
 * @param {any} doc the document Prism serves
 * @param {number} prismPort
 */
export function createFront(doc, prismPort) {
  const find = operationIndex(doc);
  return http.createServer(async (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const prefer = req.headers.prefer;
    const route = find(req.method ?? 'GET', path);
    const headers = { ...req.headers, host: `127.0.0.1:${prismPort}` };
    if (route?.isPublic) {
      delete headers.authorization;
      delete headers['x-api-key'];
    }
    let rewritten = preferWithCode(prefer, route);
    let body;
    if (route?.discriminator && /json/.test(req.headers['content-type'] ?? '')) {
      body = await readBody(req);
      if (body === undefined) {
        res.writeHead(413, { 'content-type': 'text/plain' });
        return res.end('mock: body too large');
      }
      let parsed;
      try {
        parsed = JSON.parse(body.toString('utf8'));
      } catch {
        parsed = undefined;
      }
      const chosen = preferForBody(prefer, route, parsed);
      if (chosen) rewritten = prefer ? `${prefer}, ${chosen}` : chosen;
      headers['content-length'] = String(body.length);
      delete headers['transfer-encoding'];
    }
    if (rewritten) headers.prefer = rewritten;
    const outbound = http.request({ host: '127.0.0.1', port: prismPort, method: req.method, path: req.url, headers }, (answer) => {
      const problem =
        !asksForInvalid(rewritten) && (answer.statusCode === 422 || answer.statusCode === 400)
          ? validationProblem(answer.headers['sl-violations'], path)
          : undefined;
      if (!problem) {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        return;
      }
      answer.resume();
      const body = JSON.stringify(problem);
      const { 'content-length': _length, 'content-type': _type, ...rest } = answer.headers;
      res.writeHead(400, { ...rest, 'content-type': 'application/problem+json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
    outbound.on('error', (error) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`mock: ${error.message}`);
    });
    res.on('close', () => outbound.destroy());
    if (body) outbound.end(body);
    else req.pipe(outbound);
  });
}

/** The request's body, or undefined past MAX_BUFFERED bytes. */
async function readBody(req) {
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > MAX_BUFFERED) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}
