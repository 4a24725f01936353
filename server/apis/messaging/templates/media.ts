// Media URLs checked as the provider will fetch them: through the SSRF guard (at most 3
// redirects, each checked), then status, content type and size against the provider's limits.
import type { components } from '#generated/messaging/types.js';
import { HttpProblem } from '#server/lib/problems.js';
import { FetchFailedError, UnsafeUrlError, type SafeResponse } from '#server/lib/safe-fetch.js';
import type { Platform } from '#server/platform.js';

type S = components['schemas'];
export type MediaKind = S['MediaKind'];

const MB = 1024 * 1024;
export const MEDIA_LIMITS: Record<MediaKind, S['MediaLimits']> = {
  image: { max_size_bytes: 5 * MB, content_types: ['image/jpeg', 'image/png'] },
  video: { max_size_bytes: 16 * MB, content_types: ['video/mp4', 'video/3gpp'] },
  audio: { max_size_bytes: 16 * MB, content_types: ['audio/aac', 'audio/amr', 'audio/mpeg', 'audio/mp4', 'audio/ogg'] },
  document: {
    max_size_bytes: 100 * MB,
    content_types: [
      'application/pdf',
      'text/plain',
      'application/msword',
      'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
      'application/vnd.ms-excel',
      'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
      'application/vnd.ms-powerpoint',
      'application/vnd.openxmlformats-officedocument.presentationml.presentation',
    ],
  },
  sticker: { max_size_bytes: 500 * 1024, content_types: ['image/webp'] },
};

/** A refused URL as the problem naming its field: 400 for syntax or scheme, 422 unsafe-url for the target. */
export function unsafeProblem(error: UnsafeUrlError, pointer: string): HttpProblem {
  if (error.status === 400)
    return new HttpProblem(400, 'validation', `The URL cannot be fetched: ${error.reason}.`, { errors: [{ pointer, detail: error.reason }] });
  return new HttpProblem(422, 'unsafe-url', `The URL is not a public target: ${error.reason}.`, { errors: [{ pointer, detail: error.reason }] });
}

const header = (h: Record<string, string | string[]>, name: string) => {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
};

/** Fetches `url` and compares it with the limits of `kind`. Unsafe URLs throw (see unsafeProblem); everything else is reported. */
export async function probeMedia(platform: Platform, url: string, kind: MediaKind): Promise<S['MediaUrlValidation']> {
  return (await fetchMedia(platform, url, kind)).result;
}

/** `probeMedia`, also answering the response it checked (its body is what a sample upload sends). */
export async function fetchMedia(platform: Platform, url: string, kind: MediaKind): Promise<{ result: S['MediaUrlValidation']; response?: SafeResponse }> {
  const limits = MEDIA_LIMITS[kind];
  const result: S['MediaUrlValidation'] = {
    url,
    kind,
    reachable: false,
    http_status: null,
    content_type: null,
    size_bytes: null,
    within_limits: false,
    limits,
    problems: [],
  };
  let res;
  try {
    res = await platform.mediaFetch(url, { method: 'GET', headers: { accept: limits.content_types.join(', ') } });
  } catch (error) {
    if (error instanceof UnsafeUrlError) throw error;
    if (error instanceof FetchFailedError) {
      const code = error.reason === 'timeout' ? 'timeout' : error.reason === 'redirects' ? 'too_many_redirects' : 'unreachable';
      result.problems.push({ code, detail: error.message });
      return { result };
    }
    throw error;
  }
  result.http_status = res.status;
  if (res.status !== 200) {
    result.problems.push({
      code: res.status >= 300 && res.status < 400 ? 'too_many_redirects' : 'http_error',
      detail: `The server answered HTTP ${res.status}.`,
    });
    return { result, response: res };
  }
  result.reachable = true;
  const type = header(res.headers, 'content-type')?.split(';')[0].trim().toLowerCase() ?? null;
  result.content_type = type;
  const declared = Number(header(res.headers, 'content-length'));
  result.size_bytes = !res.truncated ? res.body.length : Number.isFinite(declared) && declared > 0 ? declared : null;
  if (!type || !limits.content_types.includes(type)) {
    result.problems.push({
      code: 'content_type_not_allowed',
      detail: `${type ?? 'No content type'} is not allowed for ${kind}; allowed: ${limits.content_types.join(', ')}.`,
    });
  }
  if (result.size_bytes === null) result.problems.push({ code: 'size_unknown', detail: 'The size could not be measured within the download limit.' });
  else if (result.size_bytes > limits.max_size_bytes)
    result.problems.push({ code: 'too_large', detail: `${result.size_bytes} bytes is over the ${limits.max_size_bytes}-byte limit for ${kind}.` });
  else if (result.size_bytes === 0) result.problems.push({ code: 'http_error', detail: 'The file is empty.' });
  result.within_limits = result.problems.length === 0;
  return { result, response: res };
}
