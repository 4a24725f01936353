// What `npm run mock` prints once the mocks are up (mocks/start.mjs). The `curl` lines are run
// as printed by test/unit/mocks/mock-commands.test.ts.

/** The example commands of the banner, against the messaging mock at `url`. */
export function bannerCommands(url) {
  return [
    `curl -H 'X-API-Key: mk_any' -H 'Prefer: code=404' ${url}/api/contacts/ct_4Tq8Lm2NxR7vK9sP`,
    `curl -H 'X-API-Key: mk_any' -H 'Prefer: example=unknown_segment' ${url}/api/contacts`,
    `curl -H 'X-API-Key: mk_any' -H 'content-type: application/json' -d '{"name":"Lena"}' ${url}/api/contacts`,
  ];
}

/** The whole banner. */
export function banner(urls, { dynamic = false } = {}) {
  const [notFound, named, invalid] = bannerCommands(urls.messaging);
  return `
Prism mocks are up (documents: generated/<api>/openapi.3.1.yaml):
${Object.entries(urls)
  .map(([api, url]) => `  ${api.padEnd(10)} ${url}`)
  .join('\n')}

Pick an answer with the Prefer header (CORS is open: a browser app on any origin may call them):
  Prefer: code=404                    the 404 answer of that operation
  Prefer: example=<name>              a named example of the spec, with its status (npm run mock:examples -- <api>)
  Prefer: code=422, example=<name>    both
  Prefer: dynamic=true                generated data for this request${dynamic ? ' (already the default: --dynamic)' : ''}
  e.g. ${notFound}
       ${named}
Requests need a credential of the right shape (any value) and are validated as the server
validates them: without one, 401; a request that breaks the contract, 400 naming each input:
  e.g. ${invalid}
Ctrl-C stops all of them.`;
}
