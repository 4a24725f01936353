// Applies what the provider says about an account's catalogs to our copy: catalogs and products
// new at the provider are added, changed ones updated, ones gone removed (products are deleted,
// not marked: nothing refers to them, and a campaign naming one fails when it is sent).
// Provider values outside the contract (availability spellings, odd URLs) are mapped onto it.
import type { Kysely, Selectable, Transaction } from 'kysely';
import { newId } from '#server/lib/ids.js';
import type { ProviderCatalog, ProviderProduct } from '#server/providers/types.js';
import type { Database } from '#server/store/schema.js';
import type { CatalogProductsTable, CatalogsTable } from '#server/store/schema/commerce.js';

export type CatalogRow = Selectable<CatalogsTable>;
export type ProductRow = Selectable<CatalogProductsTable>;

const AVAILABILITY = new Set(['in_stock', 'out_of_stock', 'preorder', 'available_for_order', 'discontinued']);
/** Meta's other values (`pending`, `mark_as_sold`) cannot be bought now. */
const UNAVAILABLE = 'out_of_stock';

function httpUrl(value: string | null): string | null {
  if (!value || value.length > 2048) return null;
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : null;
  } catch {
    return null;
  }
}

/** The stored form of a provider product (every column but ids and time). */
export function normaliseProduct(p: ProviderProduct) {
  const availability = p.availability.toLowerCase().replace(/[\s-]+/g, '_');
  return {
    retailer_id: p.retailerId,
    name: p.name,
    description: p.description,
    price: p.price,
    sale_price: p.salePrice,
    currency: /^[A-Z]{3}$/.test(p.currency) ? p.currency : 'XXX',
    availability: AVAILABILITY.has(availability) ? availability : UNAVAILABLE,
    image_url: httpUrl(p.imageUrl),
    url: httpUrl(p.url),
  };
}

type Values = ReturnType<typeof normaliseProduct>;
const KEYS = ['retailer_id', 'name', 'description', 'price', 'sale_price', 'currency', 'availability', 'image_url', 'url'] as const;

function differs(row: ProductRow, values: Values): boolean {
  return KEYS.some((k) => {
    const stored = row[k];
    const next = values[k];
    // bigint columns read back as strings
    return (stored === null ? null : String(stored)) !== (next === null ? null : String(next));
  });
}

export interface FetchedCatalog {
  catalog: ProviderCatalog;
  products: ProviderProduct[];
}

/**
 * Replaces the account's copy with `fetched` (run inside a transaction that locked the account).
 * Answers the catalogs now stored, with this sync's counts, and the ids of catalogs removed.
 */
export async function applyCatalogs(
  trx: Transaction<Database>,
  account: { id: string; workspace_id: string },
  fetched: FetchedCatalog[],
  now: Date,
): Promise<{ catalogs: CatalogRow[]; removed: string[] }> {
  const stored = await trx.selectFrom('catalogs').selectAll().where('business_account_id', '=', account.id).execute();
  const byProviderId = new Map(stored.map((c) => [c.provider_catalog_id, c]));
  const catalogs: CatalogRow[] = [];
  for (const { catalog, products } of fetched) {
    const current = byProviderId.get(catalog.id);
    byProviderId.delete(catalog.id);
    const id = current?.id ?? newId('cat');
    if (!current) {
      await trx
        .insertInto('catalogs')
        .values({
          id,
          workspace_id: account.workspace_id,
          business_account_id: account.id,
          provider_catalog_id: catalog.id,
          name: catalog.name,
          synced_at: now,
          created_at: now,
        })
        .execute();
    }
    const counts = await applyProducts(trx, id, products, now);
    const row = await trx
      .updateTable('catalogs')
      .set({
        name: catalog.name,
        product_count: counts.count,
        products_added: counts.added,
        products_updated: counts.updated,
        products_removed: counts.removed,
        synced_at: now,
      })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirstOrThrow();
    catalogs.push(row);
  }
  const removed = [...byProviderId.values()].map((c) => c.id);
  if (removed.length) await trx.deleteFrom('catalogs').where('id', 'in', removed).execute();
  return { catalogs, removed };
}

async function applyProducts(trx: Transaction<Database>, catalogId: string, products: ProviderProduct[], now: Date) {
  const stored = await trx.selectFrom('catalog_products').selectAll().where('catalog_id', '=', catalogId).execute();
  const byProviderId = new Map(stored.map((p) => [p.provider_product_id, p]));
  const counts = { count: 0, added: 0, updated: 0, removed: 0 };
  const inserts: (Values & { id: string; catalog_id: string; provider_product_id: string; updated_at: Date })[] = [];
  const seen = new Set<string>();
  for (const p of products) {
    // The provider should never list a product twice; if it does, the first wins.
    if (seen.has(p.id)) continue;
    seen.add(p.id);
    const values = normaliseProduct(p);
    const current = byProviderId.get(p.id);
    if (!current) {
      inserts.push({ id: newId('prd'), catalog_id: catalogId, provider_product_id: p.id, ...values, updated_at: now });
      continue;
    }
    if (differs(current, values)) {
      await trx
        .updateTable('catalog_products')
        .set({ ...values, updated_at: now })
        .where('id', '=', current.id)
        .execute();
      counts.updated++;
    }
  }
  for (let i = 0; i < inserts.length; i += 500)
    await trx
      .insertInto('catalog_products')
      .values(inserts.slice(i, i + 500))
      .execute();
  counts.added = inserts.length;
  const gone = stored.filter((s) => !seen.has(s.provider_product_id)).map((s) => s.id);
  for (let i = 0; i < gone.length; i += 500)
    await trx
      .deleteFrom('catalog_products')
      .where('id', 'in', gone.slice(i, i + 500))
      .execute();
  counts.removed = gone.length;
  counts.count = seen.size;
  return counts;
}

/** A catalog of the workspace; null for an unknown id or another workspace's. */
export async function findCatalog(db: Kysely<Database>, workspaceId: string, id: string): Promise<CatalogRow | null> {
  return (await db.selectFrom('catalogs').selectAll().where('id', '=', id).where('workspace_id', '=', workspaceId).executeTakeFirst()) ?? null;
}
