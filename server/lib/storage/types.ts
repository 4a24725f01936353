// The one interface every stored file goes through (docs/deploy.md "Files"): Connect documents
// and their versions, the inbound media cache. Two backends: the file system under DATA_DIR
// (./disk.ts, the default) and S3-compatible object storage (./s3.ts, STORAGE_URL=s3://…).
// Keys are `<area>/<name>` built by the server from generated names or digests, never a client's
// text; both backends refuse any other shape.
import type { Readable } from 'node:stream';

/** `documents/AbC…`, `media-cache/<hex>`: a lower-case area, then names of safe characters. */
const KEY = /^[a-z][a-z0-9-]{0,31}(\/[0-9A-Za-z_-][0-9A-Za-z._-]{0,127})+$/;

export function checkKey(key: string): string {
  if (!KEY.test(key) || key.includes('..') || key.endsWith(META_SUFFIX)) throw new Error(`invalid storage key ${JSON.stringify(key.slice(0, 80))}`);
  return key;
}

/** The disk backend keeps an object's metadata beside it under this suffix (never a key's). */
export const META_SUFFIX = '.meta.json';

export interface PutOptions {
  contentType?: string;
  /** Small string pairs kept with the object (S3 user metadata); keys lower-case. */
  metadata?: Record<string, string>;
  /** A body longer than this stops the write with `tooLarge()`, and nothing is left behind. */
  maxBytes?: number;
  tooLarge?: () => Error;
}

export interface PutResult {
  size: number;
  /** SHA-256 of the bytes written, hex. */
  sha256: string;
}

export interface ObjectInfo {
  size: number;
  modified: Date;
  metadata: Record<string, string>;
}

/** Inclusive byte range, as HTTP's Range counts. */
export interface ByteRange {
  start: number;
  end: number;
}

export interface ObjectRead {
  stream: Readable;
  /** The whole object's size (not the range's). */
  size: number;
}

export interface ListedObject {
  key: string;
  size: number;
  modified: Date;
}

export interface ObjectStorage {
  /** `disk` or `s3`: the logs and the health answer say which. */
  readonly kind: 'disk' | 's3';
  /** Where, for people: the directory, or `s3://bucket/prefix`. */
  readonly location: string;
  /** Writes the whole body under `key`, or nothing (a reader never sees part of an object). */
  put(key: string, body: Buffer | AsyncIterable<Uint8Array>, options?: PutOptions): Promise<PutResult>;
  /** A stream of the object (of `range` when given; the caller checked it against `size`), or null when absent. */
  read(key: string, range?: ByteRange): Promise<ObjectRead | null>;
  /** Size, time and metadata, or null when absent. */
  stat(key: string): Promise<ObjectInfo | null>;
  /** Marks the object used now (the media cache's least-recently-used order). */
  touch(key: string, at: Date): Promise<void>;
  /** Removes the object; absent is fine. */
  remove(key: string): Promise<void>;
  /** Every object under `prefix` (`documents/`), in no particular order. */
  list(prefix: string): AsyncIterable<ListedObject>;
  /** A cheap round trip that fails when the storage cannot be used (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}
