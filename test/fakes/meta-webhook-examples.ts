// Payloads the provider itself publishes, copied from ../shared/meta-webhook-examples/: the
// "Text Message" example of facebook/openapi (business-messaging-api_v23.0.yaml, the webhook's
// requestBody examples) and the sent, delivered and read statuses assembled from Meta's status
// webhook reference. `metaTextDelivery` and `metaStatusDelivery` address them to one of our numbers,
// with fresh ids and times, and change nothing else about Meta's shape.

export const META_TEXT_MESSAGE = {
  object: 'whatsapp_business_account',
  entry: [
    {
      id: '419561257915477',
      changes: [
        {
          value: {
            messaging_product: 'whatsapp',
            metadata: {
              display_phone_number: '15550783881',
              phone_number_id: '106540352242922',
            },
            contacts: [
              {
                profile: {
                  name: 'Sheena Nelson',
                },
                wa_id: '16505551234',
              },
            ],
            messages: [
              {
                from: '16505551234',
                id: 'wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=',
                timestamp: '1749416383',
                type: 'text',
                text: {
                  body: 'Does it come in another color?',
                },
              },
            ],
          },
          field: 'messages',
        },
      ],
    },
  ],
} as const;

/** The `statuses[]` entries, `id` a placeholder for the wamid they are about. */
export const META_STATUSES = {
  sent: {
    id: '<WAMID>',
    status: 'sent',
    timestamp: '1750263773',
    recipient_id: '16505551234',
    conversation: {
      id: '6ceb9d929c1a2e4a8a3b2e1d5e0f7a41',
      expiration_timestamp: '1750350180',
      origin: {
        type: 'utility',
      },
    },
    pricing: {
      billable: true,
      pricing_model: 'PMP',
      type: 'regular',
      category: 'utility',
    },
  },
  delivered: {
    id: '<WAMID>',
    status: 'delivered',
    timestamp: '1750263780',
    recipient_id: '16505551234',
    conversation: {
      id: '6ceb9d929c1a2e4a8a3b2e1d5e0f7a41',
      origin: {
        type: 'utility',
      },
    },
    pricing: {
      billable: true,
      pricing_model: 'PMP',
      type: 'regular',
      category: 'utility',
    },
  },
  read: {
    id: '<WAMID>',
    status: 'read',
    timestamp: '1750263790',
    recipient_id: '16505551234',
  },
} as const;

/** Our number, as the provider knows it. */
export interface MetaTarget {
  providerPnId: string;
  /** E.164 with `+`, as stored. */
  number: string;
}

const clone = <T>(value: T): T => JSON.parse(JSON.stringify(value));

/** Meta's text-message delivery addressed to `to`, its message id `wamid`, sent `at` (default now), from `from` (default Meta's sender). */
export function metaTextDelivery(to: MetaTarget, wamid: string, at = Date.now(), from?: string) {
  const payload = clone(META_TEXT_MESSAGE) as any;
  const value = payload.entry[0].changes[0].value;
  value.metadata = { display_phone_number: to.number.replace(/^\+/, ''), phone_number_id: to.providerPnId };
  Object.assign(value.messages[0], { id: wamid, timestamp: String(Math.floor(at / 1000)) });
  if (from) {
    value.messages[0].from = from;
    value.contacts[0].wa_id = from;
  }
  return payload;
}

/** Meta's delivery of one status (`sent`, `delivered`, `read`) of `wamid`, addressed to `to`. */
export function metaStatusDelivery(to: MetaTarget, wamid: string, status: keyof typeof META_STATUSES, at = Date.now()) {
  const payload = clone(META_TEXT_MESSAGE) as any;
  const value = payload.entry[0].changes[0].value;
  value.metadata = { display_phone_number: to.number.replace(/^\+/, ''), phone_number_id: to.providerPnId };
  delete value.contacts;
  delete value.messages;
  value.statuses = [{ ...clone(META_STATUSES[status]), id: wamid, timestamp: String(Math.floor(at / 1000)) }];
  return payload;
}
