// Smoke program of openapi-generator's `typescript-fetch` clients with default options (gate:
// scripts/gates/openapi-generator.mjs, which compiles it beside the generated clients). Against a
// running server: lists contacts, uploads a local image with uploadMedia and sends it by its
// `media_id` (Messaging, X-API-Key), lists documents with a bearer token (Connect), starts a
// login session (Login, X-API-Key). Input from the environment: CHATAPP_BASE_URL,
// MESSAGING_API_KEY, CHATAPP_SENDER (a number of a connected account), CHATAPP_CONTACT (a contact
// whose 24-hour window is open), CHATAPP_IMAGE, CONNECT_ACCESS_TOKEN, LOGIN_API_KEY.
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import * as connect from '../typescript-fetch-connect/index';
import * as login from '../typescript-fetch-login/index';
import { Configuration, ContactsApi, MessagesApi, ResponseError } from '../typescript-fetch-messaging/index';

const REQUIRED = [
  'CHATAPP_BASE_URL',
  'MESSAGING_API_KEY',
  'CHATAPP_SENDER',
  'CHATAPP_CONTACT',
  'CHATAPP_IMAGE',
  'CONNECT_ACCESS_TOKEN',
  'LOGIN_API_KEY',
] as const;

async function step<T>(name: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    const response =
      error instanceof ResponseError || error instanceof connect.ResponseError || error instanceof login.ResponseError ? error.response : undefined;
    const detail = response ? `HTTP ${response.status} ${(await response.text()).slice(0, 300)}` : String(error);
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
  const config = new Configuration({ basePath: env.CHATAPP_BASE_URL, apiKey: () => env.MESSAGING_API_KEY });
  const contacts = await step('list contacts', () => new ContactsApi(config).listContacts({ limit: 10 }));
  console.log(`messaging: listed ${contacts.data.length} contact(s): ${contacts.data.map((c) => c.contactNo).join(', ')}`);

  const messages = new MessagesApi(config);
  const file = new File([readFileSync(env.CHATAPP_IMAGE)], basename(env.CHATAPP_IMAGE), { type: 'image/png' });
  const upload = await step('upload media', () => messages.uploadMedia({ chatappPhoneNumber: env.CHATAPP_SENDER, file }));
  console.log(`messaging: uploaded ${basename(env.CHATAPP_IMAGE)} as ${upload.id} (${upload.mimeType}, ${upload.sizeBytes} bytes)`);
  const sent = await step('send by media_id', () =>
    messages.sendMessage({
      sendMessageRequest: {
        messageType: 'image',
        contactNo: env.CHATAPP_CONTACT,
        chatappPhoneNumber: env.CHATAPP_SENDER,
        mediaId: upload.id,
        message: 'A photo from the typescript-fetch client',
      },
    }),
  );
  console.log(`messaging: sent ${sent.id} (image, media ${upload.id}), status ${sent.status}`);

  // Connect: the access token goes in Authorization: Bearer (the ConnectOAuth scheme).
  // typescript-fetch sends an OAuth 2 accessToken as it is (only an HTTP bearer scheme gets the
  // prefix there), so the value carries its "Bearer ".
  const connectConfig = new connect.Configuration({ basePath: env.CHATAPP_BASE_URL, accessToken: async () => `Bearer ${env.CONNECT_ACCESS_TOKEN}` });
  const documents = await step('list documents', () => new connect.DocumentsApi(connectConfig).listDocuments({ limit: 10 }));
  console.log(`connect: listed ${documents.data.length} document(s) with the bearer token`);

  const started = await step('start login', () =>
    new login.LoginSessionsApi(new login.Configuration({ basePath: env.CHATAPP_BASE_URL, apiKey: () => env.LOGIN_API_KEY })).startLoginSession({
      loginSessionStart: {},
    }),
  );
  console.log(`login: started ${started.sessionId} (code ${started.loginCode})`);
  console.log('typescript-fetch smoke: OK');
}

main();
