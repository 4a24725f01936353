// The requests of the HTTP figures, one definition for `npm run bench` (bench/run.ts) and
// `npm run bench:ab` (bench/ab.ts), so that an A/B run measures what the suite measures.
import type { LoadOptions } from './load.js';

/** What a benchmark server prints when it is ready (bench/servers/full.ts, bare.ts). */
export interface ServerInfo {
  url: string;
  token: string;
  apiKey: string;
}

export type HttpFigure = 'get' | 'post' | 'list';

// A new valid mobile number per request (E.164, Germany), so every POST creates a contact.
let serial = 10_000_000;
const newContact = () => ({ contact_no: `+49151${serial++}`, name: 'Bench Contact' });
const json = { 'content-type': 'application/json' };

/**
 * The request of `figure` against `server`: an owner GET of /api/account/me, a POST of a new
 * contact with a Messaging key, or the first page of contacts. Bare Fastify gets the same request,
 * credential included (it ignores it), so both servers parse the same bytes.
 */
export function figureRequest(figure: HttpFigure, server: ServerInfo): Omit<LoadOptions, 'connections' | 'durationSec'> {
  switch (figure) {
    case 'get':
      return { url: `${server.url}/api/account/me`, headers: { authorization: `Bearer ${server.token}` } };
    case 'post':
      return { url: `${server.url}/api/contacts`, method: 'POST', headers: { ...json, 'x-api-key': server.apiKey }, body: newContact };
    case 'list':
      return { url: `${server.url}/api/contacts?limit=20`, headers: { 'x-api-key': server.apiKey } };
  }
}
