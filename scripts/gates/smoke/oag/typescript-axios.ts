// Smoke program of openapi-generator's `typescript-axios` clients with default options (gate:
// scripts/gates/openapi-generator.mjs, which compiles it beside the generated clients and a
// pinned axios). The same steps and input as typescript-fetch.ts: list contacts, upload an image
// and send it by `media_id`, list Connect documents with a bearer token, start a login session.
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { isAxiosError } from 'axios';
import * as connect from '../typescript-axios-connect/index';
import * as login from '../typescript-axios-login/index';
import { Configuration, ContactsApi, MessagesApi } from '../typescript-axios-messaging/index';

const REQUIRED = [
  'CHATAPP_BASE_URL',
  'MESSAGING_API_KEY',
  'CHATAPP_SENDER',
  'CHATAPP_CONTACT',
  'CHATAPP_IMAGE',
  'CONNECT_ACCESS_TOKEN',
  'LOGIN_API_KEY',
] as const;

async function step<T>(name: string, call: () => Promise<{ data: T }>): Promise<T> {
  try {
    return (await call()).data;
  } catch (error) {
    const detail = isAxiosError(error) && error.response ? `HTTP ${error.response.status} ${JSON.stringify(error.response.data).slice(0, 300)}` : String(error);
    console.error(`FAIL ${name}: ${detail}`);
    process.exit(1);
  }
}

async function main() {
  const missing = REQUIRED.filter((name) => !process.env[name]);
  if (missing.length) {
    console.error(`FAIL missing environment: ${missing.join(', ')}`);
    process.exit(1);
  }
  const env = process.env as Record<(typeof REQUIRED)[number], string>;
  // Messaging API keys go in X-API-Key (the ApiKeyHeader scheme).
  const config = new Configuration({ basePath: env.CHATAPP_BASE_URL, apiKey: env.MESSAGING_API_KEY });
  const contacts = await step('list contacts', () => new ContactsApi(config).listContacts(10));
  console.log(`messaging: listed ${contacts.data.length} contact(s): ${contacts.data.map((c) => c.contact_no).join(', ')}`);

  const messages = new MessagesApi(config);
  const file = new File([readFileSync(env.CHATAPP_IMAGE)], basename(env.CHATAPP_IMAGE), { type: 'image/png' });
  const upload = await step('upload media', () => messages.uploadMedia(env.CHATAPP_SENDER, file));
  console.log(`messaging: uploaded ${basename(env.CHATAPP_IMAGE)} as ${upload.id} (${upload.mime_type}, ${upload.size_bytes} bytes)`);
  const sent = await step('send by media_id', () =>
    messages.sendMessage({
      messageType: 'image',
      contact_no: env.CHATAPP_CONTACT,
      chatapp_phone_number: env.CHATAPP_SENDER,
      media_id: upload.id,
      message: 'A photo from the typescript-axios client',
    }),
  );
  console.log(`messaging: sent ${sent.id} (image, media ${upload.id}), status ${sent.status}`);

  // Connect: the access token goes in Authorization: Bearer (the ConnectOAuth scheme).
  const documents = await step('list documents', () =>
    new connect.DocumentsApi(new connect.Configuration({ basePath: env.CHATAPP_BASE_URL, accessToken: env.CONNECT_ACCESS_TOKEN })).listDocuments(10),
  );
  console.log(`connect: listed ${documents.data.length} document(s) with the bearer token`);

  const started = await step('start login', () =>
    new login.LoginSessionsApi(new login.Configuration({ basePath: env.CHATAPP_BASE_URL, apiKey: env.LOGIN_API_KEY })).startLoginSession({}),
  );
  console.log(`login: started ${started.sessionId} (code ${started.loginCode})`);
  console.log('typescript-axios smoke: OK');
}

main();
