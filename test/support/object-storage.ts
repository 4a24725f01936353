// The storage backends the storage suites run on: the file system always, and S3 against the
// S3-compatible server named by STORAGE_TEST_S3 (an endpoint URL; .ci/run starts moto's server
// and sets it, so there the S3 runs never skip). Each S3 backend gets a bucket of its own.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { base62 } from '#server/lib/ids.js';
import { DiskStorage } from '#server/lib/storage/disk.js';
import { s3ClientConfig } from '#server/lib/storage/index.js';
import { S3Storage } from '#server/lib/storage/s3.js';
import type { ObjectStorage } from '#server/lib/storage/types.js';
import { parseStorageUrl, type ParsedStorageUrl } from '#server/lib/storage/url.js';

export const S3_ENDPOINT = process.env.STORAGE_TEST_S3;
if (!S3_ENDPOINT && process.env.REQUIRE_FLEET_ENGINES === '1')
  throw new Error('REQUIRE_FLEET_ENGINES=1 but STORAGE_TEST_S3 is not set (.ci/fleet-services.sh)');
/** moto accepts any credentials; the SDK wants some. */
export const TEST_CREDENTIALS = { accessKeyId: 'test', secretAccessKey: 'test' };

export interface TestBackend {
  name: 'disk' | 's3';
  /** A fresh, empty storage (a new directory, or a new bucket with a prefix). */
  open(): Promise<{ storage: ObjectStorage; url?: string; close(): Promise<void> }>;
}

export async function createBucket(endpoint: string, bucket: string): Promise<void> {
  const client = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials: TEST_CREDENTIALS });
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  client.destroy();
}

export function s3Storage(url: string): S3Storage {
  const parsed = parseStorageUrl(url) as ParsedStorageUrl;
  return new S3Storage(parsed, { ...s3ClientConfig(parsed, {}), credentials: TEST_CREDENTIALS });
}

/** A new bucket on the test server and its STORAGE_URL (endpoint in the URL). */
export async function newBucketUrl(prefix = 'files'): Promise<string> {
  if (!S3_ENDPOINT) throw new Error('STORAGE_TEST_S3 is not set');
  const bucket = `test-${base62(10).toLowerCase()}`;
  await createBucket(S3_ENDPOINT, bucket);
  return `s3://${bucket}/${prefix}?endpoint=${encodeURIComponent(S3_ENDPOINT)}`;
}

export const backends: TestBackend[] = [
  {
    name: 'disk',
    async open() {
      const dir = mkdtempSync(join(tmpdir(), 'storage-'));
      const storage = new DiskStorage(dir);
      return { storage, close: async () => rmSync(dir, { recursive: true, force: true }) };
    },
  },
  ...(S3_ENDPOINT
    ? [
        {
          name: 's3' as const,
          async open() {
            const url = await newBucketUrl();
            const storage = s3Storage(url);
            return { storage, url, close: () => storage.close() };
          },
        },
      ]
    : []),
];
