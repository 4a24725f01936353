#!/usr/bin/env node
// `npm run provider:deliver -- --to <provider_phone_number_id> --from <+E.164> --text "LOGIN …"`:
// posts one inbound text message to a running server's provider webhook, in the provider's
// format and signed as the provider signs it: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of
// the raw body, keyed with the app secret>`. The secret is PROVIDER_APP_SECRET, the one the
// server was started with; unset, the development server's default (server/config.ts), so it
// works against a plain `npm start`. For development; the real provider's deliveries look the same.
import { createHmac, randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    to: { type: 'string' },
    from: { type: 'string' },
    text: { type: 'string' },
    name: { type: 'string' },
    url: { type: 'string', default: process.env.BASE_URL ?? 'http://127.0.0.1:3000' },
    'dry-run': { type: 'boolean', default: false },
  },
});
const usage =
  'usage: [PROVIDER_APP_SECRET=…] npm run provider:deliver -- --to <provider_phone_number_id> --from <+E.164> --text "LOGIN <code>" [--name <profile name>] [--url http://127.0.0.1:3000] [--dry-run]';
// A development server started without PROVIDER_APP_SECRET uses this one (DEV_PROVIDER_APP_SECRET).
const secret = process.env.PROVIDER_APP_SECRET || 'dev-app-secret';
const problems = [];
if (!/^[0-9]{5,20}$/.test(values.to ?? '')) problems.push("--to must be the number's provider id (digits; a Login app's `provider_phone_number_id`)");
if (!/^\+?[1-9][0-9]{6,14}$/.test(values.from ?? '')) problems.push('--from must be the sender in E.164 (+5511987654321)');
if (!values.text) problems.push('--text is required');
if (problems.length) {
  console.error([...problems, usage].join('\n'));
  process.exit(2);
}

const from = values.from.replace(/^\+/, '');
const now = Math.floor(Date.now() / 1000);
const body = JSON.stringify({
  object: 'whatsapp_business_account',
  entry: [
    {
      id: '0',
      changes: [
        {
          field: 'messages',
          value: {
            messaging_product: 'whatsapp',
            metadata: { display_phone_number: '', phone_number_id: values.to },
            contacts: [{ profile: { name: values.name ?? `+${from}` }, wa_id: from }],
            messages: [{ from, id: `wamid.dev${randomBytes(12).toString('hex')}`, timestamp: String(now), type: 'text', text: { body: values.text } }],
          },
        },
      ],
    },
  ],
});
const signature = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
const url = `${values.url.replace(/\/$/, '')}/api/webhook/chatapp`;
if (values['dry-run']) {
  console.log(`curl -X POST ${url} -H 'content-type: application/json' -H 'X-Hub-Signature-256: ${signature}' --data-raw '${body}'`);
  process.exit(0);
}
const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature }, body }).catch((error) => {
  console.error(`could not reach ${url} (${error.cause?.code ?? error.message}): is the server running? (--url or BASE_URL)`);
  process.exit(1);
});
console.log(`${res.status} ${await res.text()}`);
process.exit(res.ok ? 0 : 1);
