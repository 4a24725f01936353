// A media URL as the provider will fetch it, checked before anything is stored or sent (sends,
// campaign values): syntax and policy now (400/422 naming the field); reaching the target is the
// provider's business.
import { HttpProblem } from '#server/lib/problems.js';
import { FetchFailedError, UnsafeUrlError } from '#server/lib/safe-fetch.js';
import type { Platform } from '#server/platform.js';

export async function checkMediaUrl(platform: Platform, url: string, pointer: string): Promise<void> {
  try {
    await platform.mediaFetch.check(url);
  } catch (error) {
    if (error instanceof UnsafeUrlError) {
      if (error.status === 400) {
        const detail = `not an acceptable media URL: ${error.reason}`;
        throw new HttpProblem(400, 'validation', detail, { errors: [{ pointer, detail }] });
      }
      throw new HttpProblem(422, 'unsafe-url', `The media URL is not a public target: ${error.reason}.`, { errors: [{ pointer, detail: error.reason }] });
    }
    // A name that does not resolve from here may still resolve for the provider.
    if (!(error instanceof FetchFailedError)) throw error;
  }
}
