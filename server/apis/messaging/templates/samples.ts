// Media header samples of a template being created. Each `header_url` is fetched once through the
// SSRF guard and checked against the provider's limits; on the Cloud API the same bytes then go
// through Meta's resumable upload, and the handle replaces `header_url` as `example.header_handle`
// (Meta does not fetch sample URLs itself). The sandbox keeps the URL: it has nothing to upload to.
import { HttpProblem } from '#server/lib/problems.js';
import { UnsafeUrlError } from '#server/lib/safe-fetch.js';
import type { Platform } from '#server/platform.js';
import { ProviderError, type ChatProvider, type ProviderAccount, type TemplateDefinitionComponent } from '#server/providers/types.js';
import { fetchMedia, unsafeProblem, type MediaKind } from './media.js';

/** A media header of the body (see `mediaHeaders`): its sample URL, format and the pointer of `header_url`. */
export interface MediaHeader {
  url: string;
  format: string;
  pointer: string;
}

export interface FetchedSample extends MediaHeader {
  bytes: Buffer;
  mimeType: string;
  filename: string;
}

const refuse = (pointer: string, format: string, detail: string) =>
  new HttpProblem(422, 'unprocessable', `header_url is not a usable ${format.toLowerCase()} sample: ${detail} (rule: media-header-sample)`, {
    errors: [{ pointer, detail: `media-header-sample: ${detail}` }],
  });

/**
 * Fetches and checks a sample as `probeMedia` does, keeping the bytes it read so an upload
 * needs no second download (which could also answer differently from the one checked).
 */
export async function fetchSample(platform: Platform, header: MediaHeader): Promise<FetchedSample> {
  let fetched;
  try {
    fetched = await fetchMedia(platform, header.url, header.format.toLowerCase() as MediaKind);
  } catch (error) {
    if (error instanceof UnsafeUrlError) throw unsafeProblem(error, header.pointer);
    throw error;
  }
  const { result: probe, response } = fetched;
  if (!probe.reachable || !probe.within_limits || !response) {
    throw refuse(header.pointer, header.format, probe.problems.map((p) => p.detail).join(' '));
  }
  // A document may be within the provider's 100 MB but over what this server downloads.
  if (response.truncated) throw refuse(header.pointer, header.format, 'The file is larger than this server downloads for a sample (16 MB).');
  return { ...header, bytes: response.body, mimeType: probe.content_type!, filename: fileNameOf(header.url, header.format) };
}

function fileNameOf(url: string, format: string): string {
  try {
    const name = decodeURIComponent(new URL(url).pathname.split('/').pop() ?? '')
      .replace(/[^\w.\- ]/g, '_')
      .slice(0, 200);
    if (name) return name;
  } catch {
    // a name is cosmetic: fall through to the default
  }
  return `sample.${format === 'IMAGE' ? 'jpg' : format === 'VIDEO' ? 'mp4' : 'pdf'}`;
}

/**
 * The components as Meta takes them: every sampled header gets `example.header_handle` from the
 * resumable upload instead of our `header_url`. Provider refusals map as elsewhere; a missing app
 * id is the adapter's 422, here with the field it concerns.
 */
export async function withHeaderHandles(
  provider: ChatProvider,
  account: ProviderAccount,
  components: unknown[],
  samples: FetchedSample[],
): Promise<TemplateDefinitionComponent[]> {
  const out = structuredClone(components) as Record<string, unknown>[];
  for (const sample of samples) {
    let handle: string;
    try {
      ({ handle } = await provider.uploadSample(account, { bytes: sample.bytes, mimeType: sample.mimeType, filename: sample.filename }));
    } catch (error) {
      if (error instanceof ProviderError) throw error.toProblem();
      if (error instanceof HttpProblem && error.status === 422 && !error.problem.errors) {
        throw new HttpProblem(422, 'unprocessable', error.problem.detail ?? error.message, {
          errors: [{ pointer: sample.pointer, detail: error.problem.detail ?? error.message }],
        });
      }
      throw error;
    }
    const header = componentAt(out, sample.pointer);
    delete header.header_url;
    header.example = { header_handle: [handle] };
  }
  return out as unknown as TemplateDefinitionComponent[];
}

/** The component a `/body/components/…/header_url` pointer names, in `components`. */
function componentAt(components: Record<string, unknown>[], pointer: string): Record<string, unknown> {
  const steps = pointer
    .replace(/^\/body\/components\//, '')
    .replace(/\/header_url$/, '')
    .split('/');
  let node: unknown = components;
  for (const step of steps) node = (node as Record<string, unknown>)[step];
  return node as Record<string, unknown>;
}
