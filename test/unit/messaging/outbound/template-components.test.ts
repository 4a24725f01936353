// The one template-component builder (outbound/template-components.ts), which the send API (after
// fitting the values to the stored template, outbound/template-fit.ts) and the campaign worker
// both use: variable values, header, body, offer, button and carousel components, the OTP button.
import { describe, expect, it } from 'vitest';
import {
  recipientFields,
  render,
  templateMessage,
  variablesOf,
  variableValue,
  type RecipientFields,
  type TemplateValues,
} from '#server/apis/messaging/outbound/template-components.js';
import { buildTemplateMessage, fitTemplateValues } from '#server/apis/messaging/outbound/template-fit.js';
import type { TemplateRow } from '#server/apis/messaging/templates/lookup.js';
import { HttpProblem } from '#server/lib/problems.js';

const now = new Date('2030-01-01T00:00:00Z');

function stored(components: unknown[], extra: Partial<TemplateRow> = {}): TemplateRow {
  return { id: 'tpl_1', name: 'promo', language: 'en_US', category: 'MARKETING', status: 'APPROVED', components, ...extra } as TemplateRow;
}

const lena: RecipientFields = { name: 'Lena', phone: '+15550001111', email: 'lena@example.com', custom_fields: { city: 'Berlin', code: 'a b/c', empty: '' } };
const nobody: RecipientFields = { name: null, phone: '+15550002222', email: null, custom_fields: null };

function problemOf(fn: () => unknown): HttpProblem {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(HttpProblem);
    return error as HttpProblem;
  }
  throw new Error('no problem thrown');
}

describe('variable values', () => {
  it('a literal is sent as it is, never expanded (J7)', () => {
    expect(variableValue('{{1}} and ${process.env.X}', lena)).toBe('{{1}} and ${process.env.X}');
  });

  it('contact fields are read from the recipient; a missing or empty one takes the fallback', () => {
    expect(variableValue({ from_contact: 'name', fallback: 'there' }, lena)).toBe('Lena');
    expect(variableValue({ from_contact: 'contact_no', fallback: '-' }, lena)).toBe('+15550001111');
    expect(variableValue({ from_contact: 'email', fallback: '-' }, lena)).toBe('lena@example.com');
    expect(variableValue({ from_contact: 'custom_fields.city', fallback: '-' }, lena)).toBe('Berlin');
    expect(variableValue({ from_contact: 'custom_fields.empty', fallback: 'none' }, lena)).toBe('none');
    expect(variableValue({ from_contact: 'custom_fields.missing', fallback: 'none' }, lena)).toBe('none');
    expect(variableValue({ from_contact: 'name', fallback: 'there' }, nobody)).toBe('there');
    expect(variableValue({ from_contact: 'custom_fields.city', fallback: 'your city' }, nobody)).toBe('your city');
  });

  it('recipientFields: the contact row, or only the number', () => {
    expect(recipientFields({ name: 'Lena', email: null, custom_fields: { a: 1 } }, '+1555')).toEqual({
      name: 'Lena',
      phone: '+1555',
      email: null,
      custom_fields: { a: 1 },
    });
    expect(recipientFields(undefined, '+1555')).toEqual({ name: null, phone: '+1555', email: null, custom_fields: null });
  });

  it('variablesOf and render fill {{n}} once', () => {
    expect(variablesOf('Hi {{1}}, {{ 2 }}!')).toEqual([1, 2]);
    expect(render('Hi {{1}}, {{2}}', ['{{2}}', 'x'])).toBe('Hi {{2}}, x');
  });
});

describe('templateMessage', () => {
  it('header, body, offer, every button type: the components Meta expects, in order', () => {
    const template = stored([
      { type: 'HEADER', format: 'IMAGE' },
      { type: 'BODY', text: 'Hi {{1}} from {{2}}' },
      { type: 'LIMITED_TIME_OFFER', limited_time_offer: { text: 'Sale', has_expiration: true } },
      { type: 'BUTTONS', buttons: [] },
    ]);
    const values: TemplateValues = {
      name: 'promo',
      language: 'en_US',
      header: { type: 'image', media_url: 'https://cdn.example.com/a.jpg' },
      body: [
        { from_contact: 'name', fallback: 'there' },
        { from_contact: 'custom_fields.city', fallback: '-' },
      ],
      limited_time_offer: { expires_at: '2030-02-01T00:00:00Z' },
      buttons: [
        { type: 'quick_reply', index: 0, payload: 'stop' },
        { type: 'url', index: 1, text: { from_contact: 'custom_fields.code', fallback: 'x' } },
        { type: 'copy_code', index: 2, coupon_code: 'SAVE10' },
        { type: 'flow', index: 3, flow_token: 'tok' },
        { type: 'catalog', index: 4 },
      ],
    };
    const built = templateMessage(template, values, lena);
    expect(built.message).toEqual({
      name: 'promo',
      language: { code: 'en_US', policy: 'deterministic' },
      components: [
        { type: 'header', parameters: [{ type: 'image', image: { link: 'https://cdn.example.com/a.jpg' } }] },
        {
          type: 'body',
          parameters: [
            { type: 'text', text: 'Lena' },
            { type: 'text', text: 'Berlin' },
          ],
        },
        {
          type: 'limited_time_offer',
          parameters: [{ type: 'limited_time_offer', limited_time_offer: { expiration_time_ms: Date.parse('2030-02-01T00:00:00Z') } }],
        },
        { type: 'button', sub_type: 'quick_reply', index: 0, parameters: [{ type: 'payload', payload: 'stop' }] },
        // The URL button's value is the URL's suffix: encoded once (it was not, for campaigns).
        { type: 'button', sub_type: 'url', index: 1, parameters: [{ type: 'text', text: 'a%20b%2Fc' }] },
        { type: 'button', sub_type: 'copy_code', index: 2, parameters: [{ type: 'coupon_code', coupon_code: 'SAVE10' }] },
        { type: 'button', sub_type: 'flow', index: 3, parameters: [{ type: 'action', action: { flow_token: 'tok' } }] },
        { type: 'button', sub_type: 'catalog', index: 4, parameters: [{ type: 'action', action: {} }] },
      ],
    });
    expect(built.text).toBe('Hi Lena from Berlin');
  });

  it('a text header variable; an uploaded document by the provider media id, with its file name', () => {
    const text = templateMessage(
      stored([
        { type: 'HEADER', format: 'TEXT', text: 'Order {{1}}' },
        { type: 'BODY', text: 'Ready' },
      ]),
      {
        name: 'promo',
        language: 'en_US',
        header: { type: 'text', text: { from_contact: 'custom_fields.order', fallback: 'your order' } },
      },
      lena,
    );
    expect(text.message.components).toEqual([{ type: 'header', parameters: [{ type: 'text', text: 'your order' }] }]);
    expect(text.text).toBe('Ready');

    const doc = templateMessage(
      stored([
        { type: 'HEADER', format: 'DOCUMENT' },
        { type: 'BODY', text: 'Invoice' },
      ]),
      {
        name: 'promo',
        language: 'en_US',
        header: { type: 'document', media_id: 'med_1', filename: 'inv.pdf' },
      },
      lena,
      new Map([['med_1', 'provider-media-1']]),
    );
    expect(doc.message.components).toEqual([{ type: 'header', parameters: [{ type: 'document', document: { id: 'provider-media-1', filename: 'inv.pdf' } }] }]);
  });

  it('no values: no components', () => {
    expect(templateMessage(stored([{ type: 'BODY', text: 'Hello' }]), { name: 'promo', language: 'en_US' }, nobody).message).toEqual({
      name: 'promo',
      language: { code: 'en_US', policy: 'deterministic' },
    });
  });

  it('a media carousel: per card a header, the body values and the buttons', () => {
    const cards = [0, 1].map(() => ({
      components: [
        { type: 'HEADER', format: 'IMAGE' },
        { type: 'BODY', text: 'Card {{1}}' },
        { type: 'BUTTONS', buttons: [{ type: 'URL', url: 'https://s.example/{{1}}' }] },
      ],
    }));
    const built = templateMessage(
      stored([
        { type: 'BODY', text: 'Look' },
        { type: 'CAROUSEL', cards },
      ]),
      {
        name: 'promo',
        language: 'en_US',
        carousel: {
          type: 'media',
          cards: [
            { header: { type: 'image', media_url: 'https://cdn.example.com/1.jpg' }, body: ['one'], buttons: [{ type: 'url', index: 0, text: 'p 1' }] },
            { header: { type: 'image', media_id: 'med_2' }, body: [{ from_contact: 'name', fallback: 'x' }], buttons: [{ type: 'url', index: 0, text: 'p2' }] },
          ],
        },
      },
      lena,
      new Map([['med_2', 'provider-media-2']]),
    );
    expect(built.message.components).toEqual([
      {
        type: 'carousel',
        cards: [
          {
            card_index: 0,
            components: [
              { type: 'header', parameters: [{ type: 'image', image: { link: 'https://cdn.example.com/1.jpg' } }] },
              { type: 'body', parameters: [{ type: 'text', text: 'one' }] },
              { type: 'button', sub_type: 'url', index: 0, parameters: [{ type: 'text', text: 'p%201' }] },
            ],
          },
          {
            card_index: 1,
            components: [
              { type: 'header', parameters: [{ type: 'image', image: { id: 'provider-media-2' } }] },
              { type: 'body', parameters: [{ type: 'text', text: 'Lena' }] },
              { type: 'button', sub_type: 'url', index: 0, parameters: [{ type: 'text', text: 'p2' }] },
            ],
          },
        ],
      },
    ]);
  });

  it('a product carousel (campaigns): product headers with the catalog ids as given', () => {
    const built = templateMessage(
      stored([
        { type: 'BODY', text: 'Picks' },
        { type: 'CAROUSEL', cards: [] },
      ]),
      {
        name: 'promo',
        language: 'en_US',
        carousel: { type: 'product', cards: [{ catalog_id: 'provider-catalog', product_retailer_id: 'sku-1' }] },
      },
      lena,
    );
    expect(built.message.components).toEqual([
      {
        type: 'carousel',
        cards: [
          {
            card_index: 0,
            components: [{ type: 'header', parameters: [{ type: 'product', product: { product_retailer_id: 'sku-1', catalog_id: 'provider-catalog' } }] }],
          },
        ],
      },
    ]);
  });

  it('an authentication template: the code goes in the body and, for the OTP button, as the URL button parameter', () => {
    const auth = stored([{ type: 'BODY' }, { type: 'BUTTONS', buttons: [{ type: 'OTP', otp_type: 'COPY_CODE' }] }], { category: 'AUTHENTICATION' });
    expect(templateMessage(auth, { name: 'promo', language: 'en_US', body: ['123456'] }, nobody).message.components).toEqual([
      { type: 'body', parameters: [{ type: 'text', text: '123456' }] },
      { type: 'button', sub_type: 'url', index: 0, parameters: [{ type: 'text', text: '123456' }] },
    ]);
    // Without a code there is nothing to repeat.
    expect(templateMessage(auth, { name: 'promo', language: 'en_US' }, nobody).message.components).toBeUndefined();
  });
});

describe('the send API: values fitted to the stored template, then the same builder', () => {
  it('fitted values build exactly what the builder builds from them', () => {
    const template = stored([
      { type: 'HEADER', format: 'DOCUMENT', header_url: 'https://cdn.example.com/sample.pdf' },
      { type: 'BODY', text: 'Hi {{1}}' },
      { type: 'BUTTONS', buttons: [{ type: 'URL', url: 'https://s.example/{{1}}' }] },
    ]);
    const values = {
      name: 'promo',
      language: 'en_US',
      body: [{ from_contact: 'name' as const, fallback: 'there' }],
      buttons: [{ type: 'url' as const, index: 0, text: 'a b' }],
    };
    const fitted = fitTemplateValues(template, values, { filename: 'terms.pdf' }, now);
    // Without a header value the sample submitted with the template is sent, with the shorthand's file name.
    expect(fitted.values.header).toEqual({ type: 'document', media_url: 'https://cdn.example.com/sample.pdf', filename: 'terms.pdf' });
    expect(fitted.mediaUrls).toEqual([]);
    const built = buildTemplateMessage(template, values, lena, { filename: 'terms.pdf' }, now);
    expect(built.message).toEqual(templateMessage(template, fitted.values, lena).message);
    expect(built.message.components).toEqual([
      { type: 'header', parameters: [{ type: 'document', document: { link: 'https://cdn.example.com/sample.pdf', filename: 'terms.pdf' } }] },
      { type: 'body', parameters: [{ type: 'text', text: 'Lena' }] },
      { type: 'button', sub_type: 'url', index: 0, parameters: [{ type: 'text', text: 'a%20b' }] },
    ]);
    expect(built.text).toBe('Hi Lena');
  });

  it('the mediaUrl shorthand is the header, and a media URL to check', () => {
    const template = stored([
      { type: 'HEADER', format: 'IMAGE' },
      { type: 'BODY', text: 'Hi' },
    ]);
    const built = buildTemplateMessage(template, { name: 'promo', language: 'en_US' }, lena, { mediaUrl: 'https://cdn.example.com/p.jpg' }, now);
    expect(built.mediaUrls).toEqual([{ url: 'https://cdn.example.com/p.jpg', pointer: '/body/mediaUrl' }]);
    expect(built.message.components).toEqual([{ type: 'header', parameters: [{ type: 'image', image: { link: 'https://cdn.example.com/p.jpg' } }] }]);
  });

  it('values that do not fit: 422 (or 400) naming the field, before anything is built', () => {
    const template = stored([
      { type: 'BODY', text: 'Hi {{1}}' },
      { type: 'BUTTONS', buttons: [{ type: 'URL', url: 'https://s.example/' }, { type: 'COPY_CODE' }] },
    ]);
    const body = problemOf(() => fitTemplateValues(template, { name: 'promo', language: 'en_US' }, {}, now));
    expect(body.status).toBe(422);
    expect(body.problem.errors?.[0]?.pointer).toBe('/body/template/body');
    const url = problemOf(() =>
      fitTemplateValues(template, { name: 'promo', language: 'en_US', body: ['x'], buttons: [{ type: 'url', index: 0, text: 'y' }] }, {}, now),
    );
    expect(url.problem.errors?.[0]?.pointer).toBe('/body/template/buttons/0');
    const coupon = problemOf(() => fitTemplateValues(template, { name: 'promo', language: 'en_US', body: ['x'] }, {}, now));
    expect(coupon.problem.detail).toMatch(/copy-code button at index 1/);
    const media = problemOf(() =>
      fitTemplateValues(
        stored([
          { type: 'HEADER', format: 'IMAGE' },
          { type: 'BODY', text: 'Hi' },
        ]),
        { name: 'promo', language: 'en_US', header: { type: 'image' } as never },
        {},
        now,
      ),
    );
    expect(media.status).toBe(400);
    expect(media.problem.errors?.[0]?.pointer).toBe('/body/template/header');
  });
});
