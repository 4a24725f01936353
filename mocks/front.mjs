// The front each Prism mock sits behind (mocks/mocks.mjs). It passes bytes through, except:
// - `Prefer: example=<name>` without `code=`: Prism looks for the name only among the success
//   answers, so the front adds the status of the one response that has an example of that name
//   (unknown or ambiguous names go through unchanged, and Prism answers 404 naming them);
// - a request Prism finds invalid: Prism answers with the first example of the operation's 422
//   (or 400), whatever it is about, and whatever status Prefer asked for; the front answers what
//   the server answers instead, a 400 `validation` problem with one entry per invalid input.
//   Unless Prefer asks for a 400, 415 or 422: a deliberately bad request gets the example named.
import http from 'node:http';

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
      routes.push({ method: method.toUpperCase(), pattern, specificity: specificity.join(''), statuses });
    }
  }
  routes.sort((a, b) => (a.specificity < b.specificity ? 1 : a.specificity > b.specificity ? -1 : 0));
  return (method, path) => routes.find((r) => r.method === method && r.pattern.test(path));
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
  let entries;
  try {
    entries = JSON.parse(header ?? '[]');
  } catch {
    return undefined;
  }
  const invalid = (Array.isArray(entries) ? entries : []).filter((v) => v?.location?.[0] === 'request' && v.severity === 'Error');
  if (!invalid.length) return undefined;
  const errors = invalid.map((v) => {
    const [, part = 'body', ...rest] = v.location.map(String);
    const missing = /must have required property '([^']+)'/.exec(v.message ?? '')?.[1];
    const unknown = /must NOT have (?:additional|unevaluated) properties/.test(v.message ?? '') ? /property '([^']+)'/.exec(v.message)?.[1] : undefined;
    const tokens = [part === 'headers' ? 'header' : part, ...rest, ...(missing ? [missing] : []), ...(unknown ? [unknown] : [])];
    const detail = missing
      ? 'is required'
      : unknown
        ? 'is not a known field'
        : String(v.message ?? 'is invalid').replace(/^Request (body( property \S+)?|(path|query|header) parameter \S+) /i, '');
    return { pointer: `/${tokens.map((t) => t.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`, detail };
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
 * An HTTP server that forwards to the Prism mock at `prismPort` as described above.
 * @param {any} doc the document Prism serves
 * @param {number} prismPort
 */
export function createFront(doc, prismPort) {
  const find = operationIndex(doc);
  return http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const prefer = req.headers.prefer;
    const headers = { ...req.headers, host: `127.0.0.1:${prismPort}` };
    const rewritten = preferWithCode(prefer, find(req.method ?? 'GET', path));
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
    req.pipe(outbound);
  });
}
