// Opaque list cursors for every list of every API: the position after the last item, signed
// with an HMAC under the server's key and bound to the workspace and the operation. A cursor
// edited, truncated, made up, or taken from another workspace's or operation's listing is
// refused with 400 `validation` (bad-inputs B6, H10), so it can never reach another tenant's rows.
//
// Lists go newest first by (created_at, id): the keyset helpers cover that common order. The
// cursor holds created_at in milliseconds, so such tables must be written with created_at from
// JS (a Date), not the database's microsecond now(), or rows within one millisecond are skipped.
import { HttpProblem } from './problems.js';
import type { SecretBox } from './secrets.js';
import { sameText } from './signatures.js';

export interface CursorScope {
  workspaceId: string;
  /** The operationId of the list. */
  operation: string;
}

export interface Page<T> {
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

type Position = Record<string, string | number>;

function mac(secrets: SecretBox, scope: CursorScope, payload: string): Buffer {
  // 128 bits of the keyed digest: enough against forgery, and keeps cursors short.
  return Buffer.from(secrets.digest(`cursor\0${scope.workspaceId}\0${scope.operation}\0${payload}`).slice(0, 32), 'hex');
}

export function encodeCursor(secrets: SecretBox, scope: CursorScope, position: Position): string {
  const payload = Buffer.from(JSON.stringify(position)).toString('base64url');
  return `${payload}.${mac(secrets, scope, payload).toString('base64url')}`;
}

export function invalidCursor(): HttpProblem {
  return new HttpProblem(400, 'validation', 'One parameter is invalid.', {
    errors: [{ pointer: '/query/cursor', detail: 'is not a cursor of this list' }],
  });
}

/** The position a cursor of this list carries; undefined without a cursor; 400 for any other. */
export function decodeCursor(secrets: SecretBox, scope: CursorScope, cursor: string | undefined): Position | undefined {
  if (cursor === undefined) return undefined;
  const [payload, signature, extra] = cursor.split('.');
  if (!payload || !signature || extra !== undefined) throw invalidCursor();
  // As text: decoded bytes would accept an edit of the spare low bits of the last character (bad-inputs B6).
  if (!sameText(signature, mac(secrets, scope, payload).toString('base64url'))) throw invalidCursor();
  try {
    const position = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    if (position && typeof position === 'object' && !Array.isArray(position)) return position as Position;
  } catch {
    // signed by us but unreadable: treat as any bad cursor
  }
  throw invalidCursor();
}

/** A keyset position: the last item's creation time and id (newest-first lists). */
export interface Keyset {
  createdAt: Date;
  id: string;
}

export function decodeKeyset(secrets: SecretBox, scope: CursorScope, cursor: string | undefined): Keyset | undefined {
  const position = decodeCursor(secrets, scope, cursor);
  if (!position) return undefined;
  const createdAt = new Date(String(position.t));
  if (typeof position.t !== 'string' || typeof position.id !== 'string' || Number.isNaN(createdAt.getTime())) throw invalidCursor();
  return { createdAt, id: position.id };
}

/**
 * One page from `rows` fetched with `limit + 1`: the extra row only says whether more follow.
 * `map` turns a row into its contract shape.
 */
export function keysetPage<Row extends { created_at: Date; id: string }, Item>(
  secrets: SecretBox,
  scope: CursorScope,
  rows: Row[],
  limit: number,
  map: (row: Row) => Item,
): Page<Item> {
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  const hasMore = rows.length > limit && last !== undefined;
  return {
    data: items.map(map),
    has_more: hasMore,
    next_cursor: hasMore ? encodeCursor(secrets, scope, { t: last.created_at.toISOString(), id: last.id }) : null,
  };
}
