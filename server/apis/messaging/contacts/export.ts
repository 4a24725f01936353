// GET /api/contacts/export: the workspace's contacts as CSV, oldest first (created_at, id, on
// contacts_workspace_created). The database writes each line's cells (guarded and quoted by
// csvCellSql, byte for byte what csvCell writes) but the tags cell, which Node makes once per
// distinct set of tags (sorted as localeCompare sorts, which no collation of every store
// matches). On PostgreSQL one `COPY (select …) TO STDOUT` streams the rows at the database's
// speed with the socket's backpressure (#server/store/copy-out.ts); on PGlite, or when the
// instance already runs its share of COPYs, keyset pages of 5,000 rows, the next read while one
// is sent. Memory stays flat however many contacts there are. The columns are those an import
// takes, so an export imports back unchanged.
import { Readable } from 'node:stream';
import { CompiledQuery } from 'kysely';
import pg from 'pg';
import type { operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import type { Handler } from '#server/lib/handler-types.js';
import type { Read } from '#server/store/copy-out.js';
import { csvCell, csvCellSql } from './csv.js';

const PAGE = 5000;
const lit = (value: string) => pg.escapeLiteral(value);

/**
 * A custom field's value as text the way `String(value)` writes it. Stored numbers are the text
 * JSON.stringify wrote, except that the database keeps 1e21 and 1.5e-7 as 1000000000000000000000
 * and 0.00000015: those two ranges (21 digits and more, under a millionth) are written back in
 * JavaScript's exponent form.
 */
function valueText(v: string): string {
  const t = `(${v} #>> '{}')`;
  const abs = `ltrim(${t}, '-')`;
  const digits = `trim(leading '0' from trim(trailing '0' from replace(${abs}, '.', '')))`;
  const big = `(${abs} ~ '^[0-9]{22}')`;
  const exponent = `(case when ${big} then '+' || (length(split_part(${abs}, '.', 1)) - 1) else '-' || (length(substring(${abs} from '^0\\.(0*)')) + 1) end)`;
  const js = `(case when ${t} like '-%' then '-' else '' end) || left(${digits}, 1) || (case when length(${digits}) > 1 then '.' || substr(${digits}, 2) else '' end) || 'e' || ${exponent}`;
  return `(case when jsonb_typeof(${v}) = 'number' and ${t} ~ '^-?([0-9]{22}|0\\.0{6})' then ${js} else ${t} end)`;
}

/** Each distinct set of tags of a row (its ids as the database lists them) as its cell, sorted as localeCompare sorts. */
class TagCells {
  private readonly cells = new Map<string, string>();
  private readonly names: Map<string, string>;
  constructor(tags: { id: string; name: string }[]) {
    this.names = new Map(tags.map((t) => [t.id, t.name]));
  }

  /** The cell, or undefined when an id is not among the tags read. */
  cell(ids: string): string | undefined {
    let cell = this.cells.get(ids);
    if (cell === undefined) {
      const names: string[] = [];
      for (const id of ids ? ids.split(',') : []) {
        const name = this.names.get(id);
        if (name === undefined) return undefined;
        names.push(name);
      }
      cell = csvCell(names.sort((a, b) => a.localeCompare(b)).join(','));
      // Distinct sets are few in practice; a workspace where they are not keeps this bounded.
      if (this.cells.size >= 10_000) this.cells.clear();
      this.cells.set(ids, cell);
    }
    return cell;
  }
}

interface Plan {
  header: string;
  tags: TagCells;
  /** The SELECT of the rows; with `page`, one keyset page (and the cursor's columns). */
  query(page?: { after?: { at: string; id: string } }): string;
}

/** What the export needs from the workspace (its custom fields, its tags), read with `read`. */
async function plan(read: Read, workspaceId: string): Promise<Plan> {
  const keys = (await read<{ key: string }>('select key from custom_fields where workspace_id = $1 order by created_at, id', [workspaceId])).map((f) => f.key);
  const tags = await read<{ id: string; name: string }>('select id, name from tags where workspace_id = $1', [workspaceId]);
  return {
    header: `${['contact_no', 'name', 'email', 'tags', 'opted_out', ...keys].join(',')}\r\n`,
    tags: new TagCells(tags),
    query: (page) => linesQuery(workspaceId, keys, page),
  };
}

/**
 * The export's rows in SQL, in created_at, id order: each row the line's text before its tags
 * cell, the tag ids (unordered, joined by commas) and the rest of the line (CRLF included).
 * Three levels, each kept a subquery of its own (ORDER BY, OFFSET 0) so that what one computes
 * is computed once per row: the row's values, then their text, then the cells.
 */
function linesQuery(workspaceId: string, keys: string[], page?: { after?: { at: string; id: string } }): string {
  const after = page?.after ? `and (c.created_at, c.id) > (${lit(page.after.at)}::timestamptz, ${lit(page.after.id)})` : '';
  const values = `select c.phone, coalesce(c.name, '') as name, coalesce(c.email, '') as email, c.opted_out_at is not null as opted_out,
      (select coalesce(string_agg(ct.tag_id, ','), '') from contact_tags ct where ct.contact_id = c.id) as tag_ids,
      ${keys.map((key, i) => `c.custom_fields -> ${lit(key)} as j${i}, `).join('')}c.created_at::text as at, c.id
    from contacts c
    where c.workspace_id = ${lit(workspaceId)} ${after}
    order by c.created_at, c.id${page ? ` limit ${PAGE}` : ''}`;
  const texts = `select v.*${keys.map((_, i) => `, (case when j${i} is null or jsonb_typeof(j${i}) = 'null' then null else ${valueText(`j${i}`)} end) as f${i}`).join('')}
    from (${values}) v offset 0`;
  const rest = [`(case when opted_out then 'true' else 'false' end)`, ...keys.map((_, i) => `coalesce(${csvCellSql(`f${i}`)}, '')`)];
  return `select ${[csvCellSql('phone', false), csvCellSql('name'), csvCellSql('email')].join(` || ',' || `)} || ',' as before, tag_ids,
      ',' || ${rest.join(` || ',' || `)} || E'\\r\\n' as after${page ? ', at, id' : ''}
    from (${texts}) x`;
}

export const exportContacts: Handler<operations['exportContacts']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const { store } = request.server.platform;
  const { db } = store;
  reply.header('content-type', 'text/csv; charset=utf-8');
  reply.header('content-disposition', 'attachment; filename="contacts.csv"');

  const copied = await store.copyOut?.(async (read) => {
    const p = await plan(read, workspaceId);
    return {
      select: p.query(),
      head: p.header,
      row: (fields, out) => {
        // Read in the COPY's snapshot, every tag of a row is known.
        out.push(fields[0]!, p.tags.cell(fields[1]!.toString('latin1'))!, fields[2]!);
      },
    };
  });
  if (copied) return reply.send(copied);

  const read: Read = async (text, values) => (await db.executeQuery(CompiledQuery.raw(text, values))).rows as never;
  let p = await plan(read, workspaceId);
  async function* pages() {
    yield p.header;
    const page = (after?: { at: string; id: string }) => read<{ before: string; tag_ids: string; after: string; at: string; id: string }>(p.query({ after }));
    let next = page();
    for (;;) {
      const rows = await next;
      if (!rows.length) return;
      const last = rows.at(-1)!;
      // The next page is read while this one is sent.
      if (rows.length === PAGE) {
        next = page({ at: last.at, id: last.id });
        // A download abandoned meanwhile never awaits it: its failure is nobody's to report.
        next.catch(() => {});
      }
      let chunk = '';
      for (const r of rows) {
        let tags = p.tags.cell(r.tag_ids);
        // A tag made since the export began (the pages are not one snapshot): the tags again.
        if (tags === undefined) {
          p = { ...p, tags: (await plan(read, workspaceId)).tags };
          tags = p.tags.cell(r.tag_ids) ?? '';
        }
        chunk += r.before + tags + r.after;
      }
      yield chunk;
      if (rows.length < PAGE) return;
    }
  }
  return reply.send(Readable.from(pages()));
};
