// `COPY (select …) TO STDOUT` on PostgreSQL, for exports at the database's speed: the database
// writes the rows (each one already the text to send, built in SQL) and Node only takes the
// binary COPY framing off them, with the socket's own backpressure (a slow download pauses the
// connection, memory stays at a few chunks). A COPY holds a pool connection until its last row,
// so at most COPY_STREAMS run at once per instance; `copyOut` answers `undefined` past that
// (and on PGlite, which has no COPY stream) and the caller reads keyset pages instead.
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import type pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';

/** COPYs running at once per instance: the pool has 10 connections, requests need the rest. */
export const COPY_STREAMS = 3;

/** Rows of a query (values bound), for what a COPY needs to read first. */
export type Read = <R>(text: string, values?: unknown[]) => Promise<R[]>;

/** Appends what to send for one row to `out`; its fields (null: SQL NULL) are only valid during the call. */
export type RowWriter = (fields: (Buffer | null)[], out: (Buffer | string)[]) => void;

export interface CopyPlan {
  /** The SELECT whose rows are copied; every value in it a literal (COPY takes no parameters). */
  select: string;
  /** Sent before the first row. */
  head: string;
  row: RowWriter;
}

/**
 * A COPY's output as a stream, or undefined when none can run now (see above) or its connection
 * or `plan` failed (the caller's keyset pages then answer as any query does). `plan` reads
 * what it needs on the COPY's connection, in the COPY's snapshot (one repeatable-read
 * transaction), so the rows and what it read agree.
 */
export type CopyOut = (plan: (read: Read) => Promise<CopyPlan>) => Promise<Readable | undefined>;

export function postgresCopyOut(pool: pg.Pool): CopyOut {
  let running = 0;
  return async (plan) => {
    if (running >= COPY_STREAMS) return undefined;
    running++;
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch {
      // The pages' queries meet the same failure and answer it as every query does (503).
      running--;
      return undefined;
    }
    let done = false;
    // A COPY cut off (a download abandoned, an error) leaves the connection mid-protocol: it is
    // closed, not returned to the pool (which also ends its transaction).
    const finish = (error?: Error) => {
      if (done) return;
      done = true;
      running--;
      client.release(error);
    };
    let copy: CopyPlan;
    try {
      // JIT compiling the long per-row expressions of an export costs more than it saves.
      await client.query('begin isolation level repeatable read read only; set local jit = off');
      copy = await plan(async (text, values) => (await client.query(text, values)).rows);
    } catch (error) {
      finish(error as Error);
      return undefined;
    }
    const source = client.query(copyTo(`copy (${copy.select}) to stdout (format binary)`));
    const rows = new BinaryRows(copy.head, copy.row);
    source.on('error', (error) => {
      finish(error);
      rows.destroy(error);
    });
    source.on('end', () => {
      client.query('commit').then(
        () => finish(),
        (error: Error) => finish(error),
      );
    });
    rows.on('close', () => {
      if (!done && !source.readableEnded) {
        finish(new Error('COPY abandoned'));
        source.destroy();
      }
    });
    return source.pipe(rows);
  };
}

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');

/**
 * COPY's binary format (the PostgreSQL manual, "COPY", "Binary Format") turned into the bytes of
 * each row: a header (signature, flags, extension), then per row a 16-bit field count and each
 * field as a 32-bit length (-1: NULL) and its bytes, then a count of -1. Text fields are sent in
 * the database's encoding (UTF-8) as they are, with none of the text format's escapes.
 */
class BinaryRows extends Transform {
  private pending: Buffer = Buffer.alloc(0);
  private headerRead = false;
  private ended = false;

  constructor(
    head: string,
    private readonly row: RowWriter,
  ) {
    super({ readableHighWaterMark: 64 * 1024 });
    this.push(head);
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    const buf = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    let at = 0;
    if (!this.headerRead) {
      if (buf.length < 19 || buf.length < 19 + buf.readUInt32BE(15)) {
        this.keep(buf, 0, callback);
        return;
      }
      if (!buf.subarray(0, 11).equals(SIGNATURE)) {
        callback(new Error('COPY: not the binary format'));
        return;
      }
      const extension = buf.readUInt32BE(15);
      at = 19 + extension;
      this.headerRead = true;
    }
    const out: (Buffer | string)[] = [];
    const fields: (Buffer | null)[] = [];
    while (!this.ended && buf.length - at >= 2) {
      const count = buf.readInt16BE(at);
      if (count === -1) {
        this.ended = true;
        at += 2;
        break;
      }
      // The whole row must be here before any of it is written.
      let p = at + 2;
      fields.length = 0;
      for (let f = 0; f < count; f++) {
        if (buf.length - p < 4) break;
        const length = buf.readInt32BE(p);
        p += 4;
        if (length === -1) fields.push(null);
        else {
          if (buf.length - p < length) break;
          fields.push(buf.subarray(p, p + length));
          p += length;
        }
      }
      if (fields.length < count) break;
      this.row(fields, out);
      at = p;
    }
    if (out.length) this.push(Buffer.concat(out.map((o) => (typeof o === 'string' ? Buffer.from(o) : o))));
    this.keep(buf, at, callback);
  }

  /** Keeps the unread rest (copied: the chunk it is part of is not ours to hold). */
  private keep(buf: Buffer, from: number, callback: TransformCallback): void {
    this.pending = from < buf.length ? Buffer.from(buf.subarray(from)) : Buffer.alloc(0);
    callback();
  }

  override _flush(callback: TransformCallback): void {
    callback(this.ended ? undefined : new Error('COPY ended before its last row'));
  }
}
