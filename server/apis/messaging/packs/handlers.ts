// Industry packs: the public catalogue and previews (no credential, rate-limited per IP like
// every unauthenticated route), and applying a pack to a workspace (apply.ts).
import type { operations } from '#generated/messaging/types.js';
import type { Handler, Handlers } from '#server/lib/handler-types.js';
import { applyIndustryPack } from './apply.js';
import { HttpProblem } from '#server/lib/problems.js';
import { industryPackIn, industryPacks, listing, preview } from './catalog.js';
import { holdsPlaceholder, packValues, placeholderProblem, unknownPack } from './values.js';

const listIndustryPacks: Handler<operations['listIndustryPacks']> = async () => {
  const all = [...industryPacks().values()].sort((a, b) => a.name.localeCompare(b.name, 'en'));
  return { data: all.map(listing) };
};

const previewIndustryPack: Handler<operations['previewIndustryPack']> = async (request) => {
  const { slug } = request.params;
  const base = industryPacks().get(slug);
  if (!base) throw unknownPack(slug);
  const { language, ...query } = (request.query ?? {}) as Record<string, string | undefined>;
  const pack = language === undefined ? base : industryPackIn(slug, language);
  if (!pack)
    throw new HttpProblem(400, 'validation', `Pack ${slug} has no texts in ${language}.`, {
      errors: [{ pointer: '/query/language', detail: `is not one of the pack's languages (${(base.languages ?? [base.language]).join(', ')})` }],
    });
  const given = Object.fromEntries(Object.entries(query).filter((e): e is [string, string] => typeof e[1] === 'string'));
  const bad = Object.entries(given)
    .filter(([, v]) => holdsPlaceholder(v))
    .map(([k]) => `/query/${k}`);
  if (bad.length) throw placeholderProblem(bad);
  const { values, missing } = packValues(pack, given);
  return preview(pack, values, missing);
};

export const packHandlers: Handlers<operations> = { listIndustryPacks, previewIndustryPack, applyIndustryPack };
