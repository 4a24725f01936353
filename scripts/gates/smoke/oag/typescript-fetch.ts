// Smoke program of the openapi-generator `typescript-fetch` client for Messaging (gate:
// scripts/gates/openapi-generator.mjs, which compiles it beside the generated client). Against a
// running server: lists contacts, uploads a local image with uploadMedia, then sends it by its
// `media_id` with sendMessage (JSON), the way a generated client sends media from the device.
// Input from the environment: CHATAPP_BASE_URL, MESSAGING_API_KEY, CHATAPP_SENDER (a number of a
// connected account), CHATAPP_CONTACT (a contact whose 24-hour window is open), CHATAPP_IMAGE.
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { Configuration, ContactsApi, MessagesApi, ResponseError } from '../typescript-fetch-messaging/src/index';

const REQUIRED = ['CHATAPP_BASE_URL', 'MESSAGING_API_KEY', 'CHATAPP_SENDER', 'CHATAPP_CONTACT', 'CHATAPP_IMAGE'] as const;

async function step<T>(name: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    const detail = error instanceof ResponseError ? `HTTP ${error.response.status} ${(await error.response.text()).slice(0, 300)}` : String(error);
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
  console.log(`messaging: listed ${contacts.data.length} contact(s): ${contacts.data.map((c) => c.contact_no).join(', ')}`);

  const messages = new MessagesApi(config);
  const file = new Blob([readFileSync(env.CHATAPP_IMAGE)], { type: 'image/png' });
  const upload = await step('upload media', () =>
    messages.uploadMedia({ chatappPhoneNumber: env.CHATAPP_SENDER, file: new File([file], basename(env.CHATAPP_IMAGE), { type: 'image/png' }) }),
  );
  console.log(`messaging: uploaded ${basename(env.CHATAPP_IMAGE)} as ${upload.id} (${upload.mime_type}, ${upload.size_bytes} bytes)`);
  const sent = await step('send by media_id', () =>
    messages.sendMessage({
      sendMessageRequest: {
        messageType: 'image',
        contact_no: env.CHATAPP_CONTACT,
        chatapp_phone_number: env.CHATAPP_SENDER,
        media_id: upload.id,
        message: 'A photo from the typescript-fetch client',
      },
    }),
  );
  console.log(`messaging: sent ${sent.id} (image, media ${upload.id}), status ${sent.status}`);
  console.log('typescript-fetch smoke: OK');
}

main();
