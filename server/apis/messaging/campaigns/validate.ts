// Checks of a campaign's template values before anything is stored: they must fit the approved
// template (body variable count, header format, offer expiry), media URLs must pass the URL
// policy (SSRF guard, group G) and uploaded media ids must be the workspace's.
import type { Kysely } from 'kysely';
import { HttpProblem } from '#server/lib/problems.js';
import type { Platform } from '#server/platform.js';
import type { Database } from '#server/store/schema.js';
import type { TemplateRow } from '../templates/lookup.js';
import type { TemplateValues } from '../outbound/template-components.js';
import { mediaIdsOf } from './send-context.js';
import { checkProductCards } from '../commerce/carousel.js';
import { checkMediaUrl } from '../outbound/media-url.js';

const unprocessable = (pointer: string, detail: string, message: string) => new HttpProblem(422, 'unprocessable', message, { errors: [{ pointer, detail }] });

type Component = { type?: string; format?: string; text?: string };

/** Distinct `{{n}}` placeholders of a text. */
function placeholders(text: string | undefined): number {
  return new Set([...(text ?? '').matchAll(/\{\{\s*(\d+)\s*\}\}/g)].map((m) => m[1])).size;
}

export function checkTemplateValues(template: TemplateRow, values: TemplateValues, now: Date): void {
  const components = (Array.isArray(template.components) ? template.components : []) as Component[];
  const body = components.find((c) => c.type === 'BODY');
  const wanted = placeholders(body?.text);
  const given = values.body?.length ?? 0;
  if (wanted !== given) {
    throw unprocessable(
      '/body/template/body',
      `expected ${wanted} value(s), got ${given}`,
      `Template ${template.name} has ${wanted} body variable(s); ${given} value(s) were given.`,
    );
  }
  const header = components.find((c) => c.type === 'HEADER');
  const format = header?.format?.toUpperCase();
  if (format && format !== 'TEXT' && format !== 'LOCATION') {
    if (!values.header || values.header.type.toUpperCase() !== format) {
      throw unprocessable(
        '/body/template/header',
        `the template's header is ${format.toLowerCase()}`,
        `Template ${template.name} needs a ${format.toLowerCase()} header.`,
      );
    }
  } else if (values.header && values.header.type !== 'text') {
    throw unprocessable('/body/template/header', 'the template has no media header', `Template ${template.name} has no media header.`);
  } else if (format === 'TEXT' && placeholders(header?.text) > 0 && !values.header) {
    throw unprocessable('/body/template/header', 'the header variable needs a value', `Template ${template.name} has a header variable.`);
  }
  const offer = values.limited_time_offer;
  if (offer && Date.parse(offer.expires_at) <= now.getTime()) {
    throw unprocessable('/body/template/limited_time_offer/expires_at', 'must be in the future', 'The offer has already expired.');
  }
}

/**
 * Every media URL through the policy (400 syntax, 422 `unsafe-url`); every media id the
 * workspace's (404 otherwise, as for an unknown id). Given the sender number, uploads must be
 * that number's and not expired (422): Meta serves a media id to the number it was uploaded for.
 */
export async function checkMedia(
  platform: Platform,
  db: Kysely<Database>,
  workspaceId: string,
  values: TemplateValues,
  sender?: { phoneNumberId: string },
): Promise<void> {
  const urls: [string, string][] = [];
  if (values.header && values.header.type !== 'text' && values.header.media_url) urls.push(['/body/template/header/media_url', values.header.media_url]);
  const headers: [string, { media_url?: string; media_id?: string }][] =
    values.header && values.header.type !== 'text' ? [['/body/template/header', values.header]] : [];
  if (values.carousel?.type === 'media') {
    values.carousel.cards.forEach((card, i) => {
      headers.push([`/body/template/carousel/cards/${i}/header`, card.header]);
      if (card.header.media_url) urls.push([`/body/template/carousel/cards/${i}/header/media_url`, card.header.media_url]);
    });
  }
  for (const [pointer, h] of headers) {
    if ((h.media_url === undefined) === (h.media_id === undefined)) {
      throw new HttpProblem(400, 'validation', 'A media header needs exactly one of media_url and media_id.', {
        errors: [{ pointer, detail: 'give exactly one of media_url and media_id' }],
      });
    }
  }
  // Syntax, policy and what the name resolves to, as for a direct send (bad-inputs G3, G8).
  for (const [pointer, url] of urls) await checkMediaUrl(platform, url, pointer);
  const ids = [...new Set(mediaIdsOf(values))];
  if (ids.length) {
    const rows = await db
      .selectFrom('uploaded_media')
      .select(['id', 'phone_number_id', 'expires_at'])
      .where('workspace_id', '=', workspaceId)
      .where('id', 'in', ids)
      .execute();
    const found = new Map(rows.map((r) => [r.id, r]));
    const pointerOf = (id: string) => `${headers.find(([, h]) => h.media_id === id)?.[0] ?? '/body/template'}/media_id`;
    const missing = ids.find((id) => !found.has(id));
    if (missing)
      throw new HttpProblem(404, 'not-found', `No uploaded media ${missing} in this workspace.`, {
        errors: [{ pointer: pointerOf(missing), detail: `media_id ${missing} is not an upload of this workspace` }],
      });
    const now = platform.now().getTime();
    for (const r of rows) {
      if (sender && r.phone_number_id && r.phone_number_id !== sender.phoneNumberId) {
        throw new HttpProblem(422, 'unprocessable', `Uploaded media ${r.id} was uploaded for another number; upload it for the campaign's sender.`, {
          errors: [{ pointer: pointerOf(r.id), detail: 'uploaded for another sender number' }],
        });
      }
      if (r.expires_at && new Date(r.expires_at).getTime() <= now) {
        throw new HttpProblem(
          422,
          'unprocessable',
          `Uploaded media ${r.id} expired at ${new Date(r.expires_at).toISOString()} (the provider keeps uploads 30 days); upload it again.`,
          { errors: [{ pointer: pointerOf(r.id), detail: 'expired' }] },
        );
      }
    }
  }
  // Synced catalogs of the workspace (404) holding each card's product (422 naming the card).
  if (values.carousel?.type === 'product') await checkProductCards(db, workspaceId, values.carousel.cards);
}
