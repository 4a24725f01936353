// A realistic workspace of any size, written straight into the product's own tables with
// `insert … select generate_series(…)` (one statement per table, no row through Node): contacts
// with names and E.164 numbers of seven countries, emails, custom fields, opt-outs and tags;
// chats and their messages; documents, links and reader sessions with their pages. Every value
// is derived from the row number (no randomness), so two seeds of one size hold the same data
// and the bench's probes (a name, a number, two tags) mean the same at every size.
//
// Used by `npm run seed:scale` (scripts/seed-scale.ts, bench:scale) and by the plan test
// (test/unit/store/scale-plans.test.ts), on PostgreSQL; the workspace must exist already.
import type pg from 'pg';
import { readingBackfill } from '#server/store/migrations/044_reading_rollups.js';

export interface ScaleSize {
  contacts: number;
  messages: number;
  sessions: number;
}

export interface ScaleSeedResult {
  phoneNumberId: string;
  displayPhoneNumber: string;
  tagIds: string[];
  /** The document and link with most of the sessions (`busy`). */
  busyDocumentId: string;
  busyLinkId: string;
  seconds: Record<string, number>;
}

export const SCALE_TAGS = [
  'vip',
  'newsletter',
  'lead',
  'customer',
  'wholesale',
  'berlin',
  'london',
  'returning',
  'churn-risk',
  'event-2026',
  'b2b',
  'app-user',
];
/** Percent of contacts carrying each tag (same order as SCALE_TAGS). */
const TAG_SHARE = [5, 40, 25, 30, 3, 8, 8, 20, 6, 12, 10, 35];
const FIRST = [
  'Anna',
  'Lukas',
  'Mia',
  'Leon',
  'Emma',
  'Noah',
  'Sofia',
  'Oliver',
  'Amelia',
  'Jack',
  'Chloé',
  'Louis',
  'Inès',
  'Gabriel',
  'Maria',
  'João',
  'Ana',
  'Pedro',
  'Aarav',
  'Priya',
  'Ishaan',
  'Diya',
  'Lucía',
  'Hugo',
  'Martina',
  'Pablo',
  'Olivia',
  'Liam',
  'Ava',
  'Ethan',
  'Zeynep',
  'Mehmet',
];
const LAST = [
  'Müller',
  'Schmidt',
  'Schneider',
  'Fischer',
  'Weber',
  'Smith',
  'Jones',
  'Taylor',
  'Brown',
  'Wilson',
  'Martin',
  'Bernard',
  'Dubois',
  'Thomas',
  'Silva',
  'Santos',
  'Oliveira',
  'Souza',
  'Sharma',
  'Patel',
  'Singh',
  'Kumar',
  'García',
  'Fernández',
  'López',
  'Martínez',
  'Johnson',
  'Williams',
  'Davis',
  'Miller',
  'Yılmaz',
  'Kaya',
  'Nguyen',
  'Kowalski',
  'Novak',
  'Rossi',
  'Russo',
  'Ferrari',
  'Jensen',
  'Hansen',
  'Larsen',
  'Andersson',
];
const CITIES = ['Berlin', 'Hamburg', 'London', 'Manchester', 'New York', 'Austin', 'Paris', 'Lyon', 'São Paulo', 'Rio de Janeiro', 'Mumbai', 'Madrid'];
/** Country prefixes, each followed by a fixed part and the contact's number within its country. */
const COUNTRIES = [
  ['+49151', 8],
  ['+4479', 8],
  ['+14152', 6],
  ['+336', 8],
  ['+55119', 8],
  ['+919', 9],
  ['+346', 8],
] as const;

const lit = (values: readonly string[]) => `array[${values.map((v) => `'${v.replace(/'/g, "''")}'`).join(',')}]::text[]`;

/**
 * Fills workspace `workspaceId` (which must exist, with nothing seeded yet). `tag` (a few
 * base62 characters) makes this seed's ids unique in the database. `log` gets a line per table.
 */
export async function seedScale(
  client: pg.ClientBase,
  workspaceId: string,
  tag: string,
  size: ScaleSize,
  log: (line: string) => void = () => {},
): Promise<ScaleSeedResult> {
  if (!/^[0-9A-Za-z]{4,8}$/.test(tag)) throw new Error('tag: 4 to 8 base62 characters');
  const seconds: Record<string, number> = {};
  const step = async (name: string, text: string, values: unknown[] = []) => {
    const started = performance.now();
    const r = await client.query(text, values);
    seconds[name] = (seconds[name] ?? 0) + (performance.now() - started) / 1000;
    log(`${name}: ${r.rowCount ?? 0} rows in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  };
  await client.query('set synchronous_commit = off');
  const ws = workspaceId;
  const account = `waba_${tag}Scale0001`;
  const number = `pn_${tag}Scale0001`;
  const display = `+1555${String(Number.parseInt(tag.replace(/\D/g, '').slice(0, 4) || '0', 10) % 10000).padStart(4, '0')}100`;
  await step('account', `insert into business_accounts (id, workspace_id, kind, provider_waba_id, name) values ($1, $2, 'sandbox', $3, 'Scale')`, [
    account,
    ws,
    `${Date.now()}${tag.length}`,
  ]);
  await step(
    'number',
    `insert into phone_numbers (id, workspace_id, business_account_id, provider_phone_number_id, display_phone_number, verified_name, messages_per_second)
     values ($1, $2, $3, $4, $5, 'Scale', 80)`,
    [number, ws, account, `${Date.now()}1`, display],
  );
  await step(
    'template',
    `insert into message_templates (id, workspace_id, business_account_id, name, language, category, status, components)
     values ($1, $2, $3, 'scale_offer', 'en_US', 'MARKETING', 'APPROVED', $4)`,
    [`tpl_${tag}Scale0001`, ws, account, JSON.stringify([{ type: 'BODY', text: 'Hi {{1}}, our offer.' }])],
  );
  const tagIds = SCALE_TAGS.map((_, k) => `tag_${tag}Tag${String(k).padStart(5, '0')}`);
  await step('tags', `insert into tags (id, workspace_id, name, color) select unnest($1::text[]), $2, unnest($3::text[]), '#3366ff'`, [tagIds, ws, SCALE_TAGS]);
  await step(
    'custom_fields',
    `insert into custom_fields (id, workspace_id, key, label, type, options) values
       ($1 || '1', $2, 'plan', 'Plan', 'choice', '["free","pro","enterprise"]'),
       ($1 || '2', $2, 'city', 'City', 'text', null),
       ($1 || '3', $2, 'score', 'Score', 'number', null),
       ($1 || '4', $2, 'birthday', 'Birthday', 'date', null)`,
    [`cf_${tag}Field000`, ws],
  );
  const n = size.contacts;
  // Contacts: created over the last two years, oldest first; a quarter without a name, 40% have
  // written in, 2% opted out, most with custom fields.
  const countries = `array[${COUNTRIES.map(([p]) => `'${p}'`).join(',')}]::text[]`;
  const widths = `array[${COUNTRIES.map(([, w]) => w).join(',')}]::int[]`;
  await step(
    'contacts',
    `insert into contacts (id, workspace_id, phone, name, email, last_inbound_at, created_at, updated_at, custom_fields, opted_out_at, opt_out_source)
     select 'ct_' || $2 || lpad(i::text, 12, '0'), $1,
       (${countries})[i % 7 + 1] || lpad((i / 7)::text, (${widths})[i % 7 + 1], '0'),
       case when i % 4 = 3 then null else (${lit(FIRST)})[(i * 7) % ${FIRST.length} + 1] || ' ' || (${lit(LAST)})[(i * 13 + i / 97) % ${LAST.length} + 1] end,
       case when i % 5 < 3 then 'user' || i || '@' || (array['gmail.com','outlook.com','web.de','yahoo.co.uk','icloud.com'])[i % 5 + 1] end,
       case when i % 5 < 2 then t.at + ((i % 9000) || ' minutes')::interval end,
       t.at, t.at,
       case when i % 10 < 7 then jsonb_build_object('plan', (array['free','pro','enterprise'])[i % 3 + 1], 'city', (${lit(CITIES)})[i % ${CITIES.length} + 1],
         'score', i % 100, 'birthday', to_char(date '1960-01-01' + (i % 15000), 'YYYY-MM-DD')) else '{}'::jsonb end,
       case when i % 50 = 0 then t.at + interval '1 day' end,
       case when i % 50 = 0 then 'keyword' end
     from generate_series(1, $3::int) i,
       lateral (select date_trunc('milliseconds', now() - interval '730 days' + (i::float8 / $3 * 730 * 86400) * interval '1 second') as at) t`,
    [ws, tag, n],
  );
  // Tags: each contact carries each tag with its share, decided by a hash of (contact, tag).
  await step(
    'contact_tags',
    `insert into contact_tags (contact_id, tag_id)
     select 'ct_' || $2 || lpad(i::text, 12, '0'), ($3::text[])[k]
     from generate_series(1, $1::int) i, generate_series(1, ${SCALE_TAGS.length}) k
     where abs(hashint4(i * 31 + k)) % 100 < ($4::int[])[k]`,
    [n, tag, tagIds, TAG_SHARE],
  );
  // Chats: the contacts that wrote in or were written to, three messages each on average.
  const chats = Math.max(1, Math.min(n, Math.ceil(size.messages / 3)));
  await step(
    'chats',
    `insert into chats (id, workspace_id, phone_number_id, contact_id, last_message_at, unread_count, created_at)
     select 'chat_' || $2 || lpad(i::text, 12, '0'), $1, $3, 'ct_' || $2 || lpad((((i - 1) * ${n > chats ? Math.floor(n / chats) : 1}) % $4 + 1)::text, 12, '0'),
       now() - (($5 - i) * interval '20 seconds'), i % 3, now() - interval '400 days'
     from generate_series(1, $5::int) i`,
    [ws, tag, number, n, chats],
  );
  await step(
    'messages',
    `insert into messages (id, workspace_id, phone_number_id, contact_id, chat_id, direction, type, content, provider_message_id, status, created_at, status_at)
     select 'msg_' || $2 || lpad(m::text, 12, '0'), $1, $3, c.contact_id, c.id,
       case when m % 2 = 0 then 'inbound' else 'outbound' end, 'text',
       jsonb_build_object('text', jsonb_build_object('body', 'Message ' || m || ' about order #' || (m % 100000))),
       'wamid.' || $2 || m, case when m % 2 = 0 then 'received' else (array['sent','delivered','read'])[m % 3 + 1] end,
       c.last_message_at - ((m % 3) * interval '1 hour'), c.last_message_at - ((m % 3) * interval '1 hour')
     from generate_series(1, $4::int) m
     join chats c on c.id = 'chat_' || $2 || lpad(((m - 1) % $5 + 1)::text, 12, '0')`,
    [ws, tag, number, size.messages, chats],
  );
  await step(
    'chat_last_message',
    `update chats c set last_message_id = 'msg_' || $2 || lpad((substr(c.id, length('chat_' || $2) + 1)::bigint)::text, 12, '0')
     where c.workspace_id = $1 and c.id like 'chat\\_' || $2 || '%'`,
    [ws, tag],
  );
  // Documents, links and reader sessions: a tenth of the sessions on one link of one document
  // (the busy link), the rest spread over 20 documents with 10 links each.
  const docs = 20;
  await step(
    'documents',
    `insert into documents (id, workspace_id, title, filename, content_type, size_bytes, page_count, sha256, storage_key, created_at)
     select 'doc_' || $2 || lpad(d::text, 8, '0'), $1, 'Brochure ' || d, 'brochure-' || d || '.pdf', 'application/pdf', 100000 + d, 12,
       md5(d::text) || md5(d::text), 'scale/' || $2 || '/' || d, now() - interval '400 days'
     from generate_series(1, ${docs}) d`,
    [ws, tag],
  );
  await step(
    'links',
    `insert into links (id, workspace_id, document_id, external_id, recipient_email, slug, created_at)
     select 'lnk_' || $2 || lpad(l::text, 8, '0'), $1, 'doc_' || $2 || lpad(((l - 1) / 10 + 1)::text, 8, '0'), 'crm-' || l, 'reader' || l || '@example.com',
       $2 || 'slug' || l, now() - interval '400 days'
     from generate_series(1, ${docs * 10}) l`,
    [ws, tag],
  );
  const sessions = size.sessions;
  await step(
    'reader_sessions',
    `insert into reader_sessions (id, workspace_id, link_id, document_id, reader_id, token_digest, device, started_at, last_activity_at, ended_at,
       duration_ms, last_event_at)
     select 'rs_' || $2 || lpad(s::text, 12, '0'), $1, 'lnk_' || $2 || lpad(l::text, 8, '0'), 'doc_' || $2 || lpad(((l - 1) / 10 + 1)::text, 8, '0'),
       'rdr_' || $2 || lpad((s % 50000)::text, 10, '0'), md5(s::text), (array['desktop','mobile','tablet'])[s % 3 + 1], t.at, t.at + interval '3 minutes',
       t.at + interval '3 minutes', 180000, t.at + interval '3 minutes'
     from generate_series(1, $3::int) s,
       lateral (select case when s % 10 = 0 then 1 else s % ${docs * 10} + 1 end as l,
                       now() - interval '365 days' + (s::float8 / $3 * 365 * 86400) * interval '1 second' as at) t`,
    [ws, tag, sessions],
  );
  await step(
    'reader_page_stats',
    `insert into reader_page_stats (session_id, page, views, time_ms)
     select 'rs_' || $2 || lpad(s::text, 12, '0'), p, 1 + (s + p) % 2, 20000 + (s * p) % 40000
     from generate_series(1, $1::int) s, generate_series(1, 3) p`,
    [sessions, tag],
  );
  // The reading rollups the product keeps with every view (connect/content/reading.ts), made from
  // these sessions the way migration 044 backfills them.
  for (const [i, text] of readingBackfill('s.workspace_id = $1').entries()) await step(`reading_rollups_${i + 1}`, text, [ws]);
  for (const table of [
    'contacts',
    'contact_tags',
    'chats',
    'messages',
    'reader_sessions',
    'reader_page_stats',
    'reading_totals',
    'reading_pages',
    'reading_readers',
    'links',
    'documents',
    'tags',
  ]) {
    await step('analyze', `analyze ${table}`);
  }
  return {
    phoneNumberId: number,
    displayPhoneNumber: display,
    tagIds,
    busyDocumentId: `doc_${tag}${'1'.padStart(8, '0')}`,
    busyLinkId: `lnk_${tag}${'1'.padStart(8, '0')}`,
    seconds,
  };
}
