// Static files of the pages (scripts, stylesheets, icons), read once at start from beside the
// module that serves them, so they travel with their area and with a compiled build alike.
import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import type { FastifyInstance } from 'fastify';

export interface Asset {
  body: Buffer;
  type: string;
}

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/** The files `names` of the folder `dir` (a URL ending in `/`, e.g. `new URL('./assets/', import.meta.url)`). */
export function readAssets(dir: URL, names: string[]): Map<string, Asset> {
  return new Map(
    names.map((name) => {
      const type = TYPES[extname(name)];
      if (!type) throw new Error(`no content type for the asset ${name}`);
      return [name, { body: readFileSync(new URL(name, dir)), type }];
    }),
  );
}

/**
 * One GET route per asset, `${prefix}/${name}`, with its type and `cacheControl`. Any other name
 * under the prefix is whatever the app answers for an unknown path. The pages that load them
 * allow this origin (`script-src 'self'`, `style-src 'self'`), nothing inline.
 */
export function serveAssets(app: FastifyInstance, prefix: string, assets: Map<string, Asset>, cacheControl: string): void {
  for (const [name, asset] of assets) {
    app.get(`${prefix}/${name}`, async (_request, reply) => reply.headers({ 'content-type': asset.type, 'cache-control': cacheControl }).send(asset.body));
  }
}
