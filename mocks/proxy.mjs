// Validating proxies: per API, `prism proxy generated/<api>/openapi.3.1.yaml <upstream> --errors=false`
// on an internal port, behind a small front on the public port that reads the `sl-violations`
// header Prism adds to each answer and hands every violation to `onViolation`. The front passes
// bytes through untouched; Prism re-serialises what it forwards, so two kinds of request skip it
// and go straight upstream (counted as `bypassed`, not validated):
// - an endless event stream: Prism reads the whole upstream body before it answers;
// - multipart bodies: Prism reads a non-JSON body as UTF-8 text, which breaks binary uploads.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { API_ORDER, portsFrom, waitUntilUp } from './mocks.mjs';
import { parseViolations } from './violations.mjs';

export const PROXY_PORTS = portsFrom(4020);

const root = fileURLToPath(new URL('..', import.meta.url));
const prism = fileURLToPath(new URL('../node_modules/@stoplight/prism-cli/dist/index.js', import.meta.url));

/** Path patterns of the operations that answer `text/event-stream`. */
export function streamPaths(doc) {
  const patterns = [];
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const op of Object.values(item)) {
      const streams = Object.values(op?.responses ?? {}).some((r) => r?.content?.['text/event-stream']);
      if (streams) patterns.push(new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`));
    }
  }
  return patterns;
}

/** Whether a request goes straight upstream (see the top of this file). */
export function bypasses(request, patterns) {
  const path = (request.url ?? '/').split('?')[0];
  if (/^multipart\//i.test(request.headers['content-type'] ?? '')) return 'multipart';
  if (/text\/event-stream/i.test(request.headers.accept ?? '') || patterns.some((p) => p.test(path))) return 'stream';
  return null;
}

/**
 * Starts one validating proxy per API in front of `upstream`.
 * @param {{ upstream: string, ports?: Record<string, number>, apis?: string[], log?: (line: string) => void,
 *   onViolation?: (v: any) => void, onBypass?: (b: any) => void }} options
 */
export async function startProxies({ upstream, ports = PROXY_PORTS, apis = API_ORDER, log = () => {}, onViolation = () => {}, onBypass = () => {} }) {
  const upstreamUrl = new URL(upstream);
  const started = [];
  const stop = () => Promise.all(started.map((s) => s.stop()));
  try {
    for (const api of apis) {
      const internal = ports[api] + 100;
      const child = spawn(
        process.execPath,
        [prism, 'proxy', `generated/${api}/openapi.3.1.yaml`, upstreamUrl.href, '--errors=false', '--host', '127.0.0.1', '--port', String(internal)],
        {
          cwd: root,
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      child.stdout.on('data', (chunk) => log(`[${api}] ${chunk}`));
      child.stderr.on('data', (chunk) => log(`[${api}] ${chunk}`));
      const patterns = streamPaths(parse(readFileSync(new URL(`../generated/${api}/openapi.3.1.yaml`, import.meta.url), 'utf8')));
      const front = http.createServer((req, res) => {
        const reason = bypasses(req, patterns);
        const target = reason ? { host: upstreamUrl.hostname, port: upstreamUrl.port || 80 } : { host: '127.0.0.1', port: internal };
        const exchange = { api, method: req.method, path: req.url.split('?')[0], contractCase: req.headers['x-contract-case'] };
        if (reason) onBypass({ ...exchange, reason });
        const outbound = http.request(
          { ...target, method: req.method, path: req.url, headers: { ...req.headers, host: reason ? upstreamUrl.host : `127.0.0.1:${internal}` } },
          (answer) => {
            for (const v of parseViolations(answer.headers['sl-violations'], { ...exchange, status: answer.statusCode })) onViolation(v);
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(res);
          },
        );
        outbound.on('error', (error) => {
          if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
          res.end(`validating proxy: ${error.message}`);
        });
        res.on('close', () => outbound.destroy());
        req.pipe(outbound);
      });
      await new Promise((resolve, reject) => front.once('error', reject).listen(ports[api], '127.0.0.1', resolve));
      started.push({
        api,
        url: `http://127.0.0.1:${ports[api]}`,
        prismUrl: `http://127.0.0.1:${internal}`,
        child,
        stop: () =>
          Promise.all([
            new Promise((resolve) => {
              front.closeAllConnections();
              front.close(() => resolve());
            }),
            new Promise((resolve) => {
              if (child.exitCode !== null) return resolve();
              child.once('exit', resolve);
              child.kill('SIGTERM');
            }),
          ]),
      });
    }
    await Promise.all(started.map((s) => waitUntilUp(s.api, s.prismUrl, s.child)));
  } catch (error) {
    await stop();
    throw error;
  }
  return { urls: Object.fromEntries(started.map((s) => [s.api, s.url])), stop };
}
