// The delivery examples of the published documents are real: each signature header verifies, with
// Stripe's SDK, against the example body serialised as compact JSON and the secret its example
// description names, so a reader can check their own verification code against them.
import { readFileSync } from 'node:fs';
import Stripe from 'stripe';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';

const stripe = new Stripe('sk_test_x');

interface Example {
  value: unknown;
  description?: string;
}

describe('signed delivery examples in the webhooks documents', () => {
  for (const [api, header] of [
    ['connect', 'X-Connect-Signature'],
    ['messaging', 'X-Messaging-Signature'],
  ] as const) {
    it(`${api}: every ${header} example verifies with the secret its description names`, () => {
      const doc = parse(readFileSync(new URL(`../../../generated/${api}/openapi.3.1.yaml`, import.meta.url), 'utf8'));
      let checked = 0;
      for (const [event, item] of Object.entries<any>(doc.webhooks)) {
        const op = item.post;
        const param = op.parameters.find((p: { name: string }) => p.name === header);
        expect(param, `${event} declares ${header}`).toBeDefined();
        for (const [name, example] of Object.entries<Example>(op.requestBody.content['application/json'].examples)) {
          const signature = param.examples[name].value as string;
          const secrets = [...(example.description ?? '').matchAll(/whsec_[0-9A-Za-z]+/g)].map((m) => m[0]);
          expect(secrets.length, `${event}/${name} names its secret`).toBeGreaterThan(0);
          const t = Number(/^t=(\d+)/.exec(signature)![1]);
          const raw = JSON.stringify(example.value);
          // Every secret named verifies (during a rotation both do).
          for (const secret of secrets) {
            expect(() => stripe.webhooks.constructEvent(raw, signature, secret, 300, undefined, t), `${event}/${name} with ${secret}`).not.toThrow();
          }
          checked++;
        }
      }
      expect(checked).toBeGreaterThanOrEqual(8);
    });
  }
});
