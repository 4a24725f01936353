// Opens the configured storage: S3-compatible object storage when STORAGE_URL is set
// (s3://bucket/prefix), else files under DATA_DIR. See ./types.ts for the interface.
//
// STORAGE_URL takes the standard AWS settings from the environment (AWS_ENDPOINT_URL or
// AWS_ENDPOINT_URL_S3, AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
// or a profile), and lets the URL's query override them for one deployment:
// `s3://bucket/prefix?endpoint=http://127.0.0.1:9000&region=eu-west-1&path_style=true`.
// A custom endpoint means path-style addressing unless `path_style=false`.
// The AWS SDK is loaded only for S3: the default start does not pay for it.
import type { S3ClientConfig } from '@aws-sdk/client-s3';
import { DiskStorage } from './disk.js';
import type { ObjectStorage } from './types.js';
import { parseStorageUrl, type ParsedStorageUrl } from './url.js';
import { processEnvironment } from '#server/config.js';

export type { ObjectStorage } from './types.js';
export { parseStorageUrl } from './url.js';

export interface StorageSettings {
  dataDir: string;
  storageUrl?: string;
}

export function s3ClientConfig(parsed: ParsedStorageUrl, env: NodeJS.ProcessEnv = processEnvironment()): S3ClientConfig {
  const endpoint = parsed.endpoint ?? env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL;
  return {
    region: parsed.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1',
    ...(endpoint ? { endpoint } : {}),
    forcePathStyle: parsed.forcePathStyle ?? (endpoint !== undefined || env.AWS_S3_FORCE_PATH_STYLE === 'true'),
    // Bounded attempts: a request waits on storage at most a few seconds before it fails.
    maxAttempts: 3,
  };
}

export async function openStorage(settings: StorageSettings, env: NodeJS.ProcessEnv = processEnvironment()): Promise<ObjectStorage> {
  if (!settings.storageUrl) return new DiskStorage(settings.dataDir);
  const parsed = parseStorageUrl(settings.storageUrl);
  if (typeof parsed === 'string') throw new Error(parsed);
  const { S3Storage } = await import('./s3.js');
  return new S3Storage(parsed, s3ClientConfig(parsed, env));
}
