// Smoke program of the installed npm package @chatapp/clients (.artifacts/clients/*.tgz, run by
// scripts/gates/client-artifacts.mjs in a clean folder where the package is installed). Against
// a running server: lists contacts, uploads a local image (POST /api/chatapp/media), then sends it
// by its `media_id`. Input from the environment: CHATAPP_BASE_URL, MESSAGING_API_KEY,
// CHATAPP_SENDER, CHATAPP_CONTACT, CHATAPP_IMAGE. Exits non-zero naming the step on a failure.
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { createMessagingClient } from '@chatapp/clients/messaging';

const REQUIRED = ['CHATAPP_BASE_URL', 'MESSAGING_API_KEY', 'CHATAPP_SENDER', 'CHATAPP_CONTACT', 'CHATAPP_IMAGE'];
const missing = REQUIRED.filter((name) => !process.env[name]);
if (missing.length) fail(`missing environment: ${missing.join(', ')}`);
const env = process.env;

function expect(result, step) {
  if (result.error || !result.response.ok) fail(`${step}: HTTP ${result.response.status} ${JSON.stringify(result.error).slice(0, 300)}`);
  return result.data;
}
function fail(message) {
  console.error(`FAIL ${message}`);
  process.exit(1);
}

const messaging = createMessagingClient({ baseUrl: env.CHATAPP_BASE_URL, auth: { apiKey: env.MESSAGING_API_KEY } });
const contacts = expect(await messaging.GET('/api/contacts', { params: { query: { limit: 10 } } }), 'list contacts');
console.log(`messaging: listed ${contacts.data.length} contact(s): ${contacts.data.map((c) => c.contact_no).join(', ')}`);

const name = basename(env.CHATAPP_IMAGE);
const upload = expect(
  await messaging.POST('/api/chatapp/media', {
    body: { chatapp_phone_number: env.CHATAPP_SENDER, file: name },
    bodySerializer: () => {
      const form = new FormData();
      form.append('chatapp_phone_number', env.CHATAPP_SENDER);
      form.append('file', new Blob([readFileSync(env.CHATAPP_IMAGE)], { type: 'image/png' }), name);
      return form;
    },
  }),
  'upload media',
);
console.log(`messaging: uploaded ${name} as ${upload.id} (${upload.mime_type}, ${upload.size_bytes} bytes)`);
const sent = expect(
  await messaging.POST('/api/chatapp/send', {
    body: {
      messageType: 'image',
      contact_no: env.CHATAPP_CONTACT,
      chatapp_phone_number: env.CHATAPP_SENDER,
      media_id: upload.id,
      message: 'A photo from @chatapp/clients',
    },
  }),
  'send by media_id',
);
console.log(`messaging: sent ${sent.id} (image, media ${upload.id}), status ${sent.status}`);
console.log('npm package smoke: OK');
