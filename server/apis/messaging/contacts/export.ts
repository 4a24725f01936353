// GET /api/contacts/export: the workspace's contacts as CSV, streamed page by page (keyset on
// created_at and id, oldest first, on contacts_workspace_created), so memory stays flat however
// many contacts there are: at most the page being written and the next one, read meanwhile.
// The columns are those an import takes, so an export imports back unchanged.
import { Readable } from 'node:stream';
import { sql, type SqlBool } from 'kysely';
import type { operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import type { Handler } from '#server/lib/handler-types.js';
import { csvCell } from './csv.js';
import { TAG_NAMES } from './views.js';

const PAGE = 5000;

export const exportContacts: Handler<operations['exportContacts']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const db = request.server.platform.store.db;
  const fields = await db.selectFrom('custom_fields').select('key').where('workspace_id', '=', workspaceId).orderBy('created_at').orderBy('id').execute();
  const keys = fields.map((f) => f.key);
  const header = ['contact_no', 'name', 'email', 'tags', 'opted_out', ...keys].join(',');
  async function* lines() {
    yield `${header}\r\n`;
    const page = (after?: { created_at: Date; id: string }) => {
      let query = db
        .selectFrom('contacts')
        .select(['id', 'phone', 'name', 'email', 'custom_fields', 'opted_out_at', 'created_at', TAG_NAMES.as('tags')])
        .where('workspace_id', '=', workspaceId);
      if (after) query = query.where(sql<SqlBool>`(created_at, id) > (${after.created_at}, ${after.id})`);
      return query.orderBy('created_at').orderBy('id').limit(PAGE).execute();
    };
    let next = page();
    for (;;) {
      const rows = await next;
      if (!rows.length) return;
      const last = rows.at(-1)!;
      // The next page is read while this one is formatted and sent.
      if (rows.length === PAGE) {
        next = page({ created_at: last.created_at, id: last.id });
        // A download abandoned meanwhile never awaits it: its failure is nobody's to report.
        next.catch(() => {});
      }
      let chunk = '';
      for (const r of rows) {
        const custom = r.custom_fields as Record<string, string | number>;
        const cells = [
          csvCell(r.phone, false),
          csvCell(r.name ?? ''),
          csvCell(r.email ?? ''),
          csvCell([...r.tags].sort((a, b) => a.localeCompare(b)).join(',')),
          r.opted_out_at ? 'true' : 'false',
          ...keys.map((k) => (custom[k] === undefined || custom[k] === null ? '' : csvCell(String(custom[k])))),
        ];
        chunk += `${cells.join(',')}\r\n`;
      }
      yield chunk;
      if (rows.length < PAGE) return;
    }
  }
  reply.header('content-type', 'text/csv; charset=utf-8');
  reply.header('content-disposition', 'attachment; filename="contacts.csv"');
  return reply.send(Readable.from(lines()));
};
