// S3-compatible object storage (STORAGE_URL=s3://bucket/prefix): AWS S3, or any server speaking
// its API (MinIO, Ceph, R2, moto in CI). Writes go through lib-storage's Upload, which sends one
// PutObject for a small body and a multipart upload for a large one (aborted on failure, so a
// failed write leaves nothing); reads stream GetObject with its Range.
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import {
  CopyObjectCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { checkKey, type ByteRange, type ListedObject, type ObjectInfo, type ObjectRead, type ObjectStorage, type PutOptions, type PutResult } from './types.js';

/** Parts of a multipart upload (5 MiB is S3's smallest); at most two in memory at once. */
const PART_SIZE = 8 * 1024 * 1024;

export interface S3Location {
  bucket: string;
  /** '' or ends with '/'. */
  prefix: string;
}

function notFound(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e?.name === 'NoSuchKey' || e?.name === 'NotFound' || e?.$metadata?.httpStatusCode === 404;
}

export class S3Storage implements ObjectStorage {
  readonly kind = 's3' as const;
  readonly location: string;
  private readonly client: S3Client;

  constructor(
    private readonly where: S3Location,
    clientConfig: S3ClientConfig,
  ) {
    this.location = `s3://${where.bucket}/${where.prefix}`;
    this.client = new S3Client(clientConfig);
  }

  private name(key: string): string {
    return this.where.prefix + checkKey(key);
  }

  async put(key: string, body: Buffer | AsyncIterable<Uint8Array>, options: PutOptions = {}): Promise<PutResult> {
    const digest = createHash('sha256');
    let size = 0;
    const { maxBytes, tooLarge } = options;
    let refused: Error | undefined;
    const counted = Readable.from(
      (async function* () {
        for await (const chunk of Buffer.isBuffer(body) ? [body] : body) {
          size += chunk.byteLength;
          if (maxBytes !== undefined && size > maxBytes) throw (refused = tooLarge?.() ?? new Error('object too large'));
          digest.update(chunk);
          yield Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
        }
      })(),
    );
    const upload = new Upload({
      client: this.client,
      partSize: PART_SIZE,
      queueSize: 2,
      leavePartsOnError: false,
      params: {
        Bucket: this.where.bucket,
        Key: this.name(key),
        // A Buffer is sent as it is (its length known); a stream is read part by part.
        Body: Buffer.isBuffer(body) && maxBytes === undefined ? body : counted,
        ContentType: options.contentType ?? 'application/octet-stream',
        Metadata: options.metadata,
      },
    });
    try {
      await upload.done();
    } catch (error) {
      throw refused ?? error;
    }
    if (Buffer.isBuffer(body) && maxBytes === undefined) return { size: body.length, sha256: createHash('sha256').update(body).digest('hex') };
    return { size, sha256: digest.digest('hex') };
  }

  async read(key: string, range?: ByteRange): Promise<ObjectRead | null> {
    try {
      const out = await this.client.send(
        new GetObjectCommand({ Bucket: this.where.bucket, Key: this.name(key), Range: range ? `bytes=${range.start}-${range.end}` : undefined }),
      );
      const total = range ? Number(/\/(\d+)$/.exec(out.ContentRange ?? '')?.[1] ?? Number.NaN) : Number(out.ContentLength);
      return { stream: out.Body as Readable, size: total };
    } catch (error) {
      if (notFound(error)) return null;
      throw error;
    }
  }

  async stat(key: string): Promise<ObjectInfo | null> {
    try {
      const out = await this.client.send(new HeadObjectCommand({ Bucket: this.where.bucket, Key: this.name(key) }));
      return { size: Number(out.ContentLength), modified: out.LastModified ?? new Date(0), metadata: out.Metadata ?? {} };
    } catch (error) {
      if (notFound(error)) return null;
      throw error;
    }
  }

  /** A copy onto itself (metadata replaced, unchanged) renews LastModified: S3 has no access time. */
  async touch(key: string, _at: Date): Promise<void> {
    const info = await this.stat(key);
    if (!info) return;
    const name = this.name(key);
    await this.client
      .send(
        new CopyObjectCommand({
          Bucket: this.where.bucket,
          Key: name,
          CopySource: `${this.where.bucket}/${name.split('/').map(encodeURIComponent).join('/')}`,
          MetadataDirective: 'REPLACE',
          Metadata: { ...info.metadata, 'used-at': String(Date.now()) },
        }),
      )
      .catch(() => undefined);
  }

  async remove(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.where.bucket, Key: this.name(key) }));
  }

  async *list(prefix: string): AsyncIterable<ListedObject> {
    let token: string | undefined;
    do {
      const out = await this.client.send(new ListObjectsV2Command({ Bucket: this.where.bucket, Prefix: this.where.prefix + prefix, ContinuationToken: token }));
      for (const item of out.Contents ?? []) {
        if (!item.Key) continue;
        yield { key: item.Key.slice(this.where.prefix.length), size: Number(item.Size ?? 0), modified: item.LastModified ?? new Date(0) };
      }
      token = out.IsTruncated ? out.NextContinuationToken : undefined;
    } while (token);
  }

  async ping(): Promise<void> {
    await this.client.send(new HeadBucketCommand({ Bucket: this.where.bucket }));
  }

  async close(): Promise<void> {
    this.client.destroy();
  }
}
