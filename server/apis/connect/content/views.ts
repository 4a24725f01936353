// Rows → contract shapes (generated/connect/types.ts), and the context every event about a link
// carries (spec/webhooks/connect.tsp): external_id, recipient, link, document.
import type { Selectable } from 'kysely';
import type { components } from '#generated/connect/types.js';
import type { DocumentsTable, DocumentVersionsTable, LinksTable, ReaderSessionsTable } from '#server/store/schema/connect-content.js';

type Schemas = components['schemas'];
export type DocumentRow = Selectable<DocumentsTable>;
export type LinkRow = Selectable<LinksTable>;
export type SessionRow = Selectable<ReaderSessionsTable>;
export interface PageRow {
  session_id: string;
  page: number;
  views: number;
  time_ms: string | number;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function documentView(row: DocumentRow): Schemas['Document'] {
  return {
    id: row.id,
    title: row.title,
    filename: row.filename,
    content_type: row.content_type as Schemas['Document']['content_type'],
    size_bytes: Number(row.size_bytes),
    page_count: row.page_count,
    sha256: row.sha256,
    created_at: row.created_at.toISOString(),
    version: row.version,
  };
}

export function versionView(row: Selectable<DocumentVersionsTable>, current: number): Schemas['DocumentVersion'] {
  return {
    version: row.version,
    filename: row.filename,
    content_type: row.content_type as Schemas['DocumentVersion']['content_type'],
    size_bytes: Number(row.size_bytes),
    page_count: row.page_count,
    sha256: row.sha256,
    current: row.version === current,
    created_at: row.created_at.toISOString(),
  };
}

export function linkStatus(row: Pick<LinkRow, 'revoked_at' | 'expires_at'>, now: Date): Schemas['LinkStatus'] {
  if (row.revoked_at) return 'revoked';
  if (row.expires_at && row.expires_at.getTime() <= now.getTime()) return 'expired';
  return 'active';
}

export function linkUrl(publicUrl: string, slug: string): string {
  return `${publicUrl}/l/${slug}`;
}

export function recipientOf(row: Pick<LinkRow, 'recipient_phone' | 'recipient_email'>): Schemas['Recipient'] {
  return { ...(row.recipient_phone ? { phone: row.recipient_phone } : {}), ...(row.recipient_email ? { email: row.recipient_email } : {}) };
}

export function linkView(row: LinkRow, publicUrl: string, now: Date): Schemas['Link'] {
  return {
    id: row.id,
    document_id: row.document_id,
    external_id: row.external_id,
    recipient: recipientOf(row),
    url: linkUrl(publicUrl, row.slug),
    status: linkStatus(row, now),
    allow_download: row.allow_download,
    expires_at: iso(row.expires_at),
    created_at: row.created_at.toISOString(),
    revoked_at: iso(row.revoked_at),
    last_opened_at: iso(row.last_opened_at),
    require_phone_verification: row.require_phone_verification,
    version: row.version,
  };
}

export function pageStats(pages: PageRow[]): Schemas['PageStat'][] {
  return [...pages].sort((a, b) => a.page - b.page).map((p) => ({ page: p.page, views: Number(p.views), time_ms: Number(p.time_ms) }));
}

export function sessionView(row: SessionRow, pages: PageRow[], pageCount: number | null): Schemas['ReaderSession'] {
  const stats = pageStats(pages);
  return {
    id: row.id,
    link_id: row.link_id,
    document_id: row.document_id,
    device: row.device as Schemas['ReaderDevice'],
    started_at: row.started_at.toISOString(),
    last_activity_at: row.last_activity_at.toISOString(),
    ended_at: iso(row.ended_at),
    duration_ms: Number(row.duration_ms),
    pages_viewed: stats.filter((p) => p.views > 0).length,
    page_count: pageCount,
    downloaded: row.downloaded,
    pages: stats,
    ...(row.verified_phone ? { verified_phone: row.verified_phone } : {}),
  };
}

/** The fields every event about a link carries (EventLinkContext). */
export function eventContext(link: LinkRow, document: Pick<DocumentRow, 'id' | 'title' | 'page_count'>, publicUrl: string, now: Date) {
  const eventLink: Schemas['EventLink'] = {
    id: link.id,
    document_id: link.document_id,
    url: linkUrl(publicUrl, link.slug),
    status: linkStatus(link, now),
    allow_download: link.allow_download,
    expires_at: iso(link.expires_at),
    created_at: link.created_at.toISOString(),
    revoked_at: iso(link.revoked_at),
  };
  const eventDocument: Schemas['EventDocument'] = { id: document.id, title: document.title, page_count: document.page_count };
  return { external_id: link.external_id, recipient: recipientOf(link) as Schemas['EventRecipient'], link: eventLink, document: eventDocument };
}

export function eventSession(row: SessionRow, pages: PageRow[]): Schemas['EventReaderSession'] {
  const { link_id: _l, document_id: _d, page_count: _p, ...session } = sessionView(row, pages, null);
  return session;
}
