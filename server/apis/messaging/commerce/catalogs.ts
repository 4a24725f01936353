// syncCatalogs and listCatalogProducts. A sync reads everything from the provider first, then
// replaces our copy in one transaction holding the account's row lock: a provider failure keeps
// the previous copy, and two syncs of one account run one after the other.
import { sql } from 'kysely';
import type { components, operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import { decodeCursor, encodeCursor, invalidCursor } from '#server/lib/cursor.js';
import type { Handler } from '#server/lib/handler-types.js';
import { HttpProblem } from '#server/lib/problems.js';
import { ProviderError } from '#server/providers/types.js';
import { findAccount, withProvider } from '../configuration/accounts.js';
import { applyCatalogs, findCatalog, type CatalogRow, type FetchedCatalog, type ProductRow } from './catalog-store.js';

type S = components['schemas'];
type ListQuery = NonNullable<operations['listCatalogProducts']['parameters']['query']>;

export const catalogNotFound = (id: string) => new HttpProblem(404, 'not-found', `No catalog ${id} in this workspace.`);

export function catalogView(row: CatalogRow): S['Catalog'] {
  return {
    id: row.id,
    provider_catalog_id: row.provider_catalog_id,
    name: row.name,
    waba_id: row.business_account_id,
    product_count: row.product_count,
    products_added: row.products_added,
    products_updated: row.products_updated,
    products_removed: row.products_removed,
    synced_at: row.synced_at.toISOString(),
  };
}

const money = (v: string | null) => (v === null ? null : Number(v));

export function productView(row: ProductRow): S['Product'] {
  return {
    id: row.id,
    catalog_id: row.catalog_id,
    retailer_id: row.retailer_id,
    provider_product_id: row.provider_product_id,
    name: row.name,
    description: row.description,
    price: money(row.price),
    sale_price: money(row.sale_price),
    currency: row.currency,
    availability: row.availability as S['ProductAvailability'],
    image_url: row.image_url,
    url: row.url,
    updated_at: row.updated_at.toISOString(),
  };
}

/**
 * The provider's failure as this operation declares it: a rate limit stays a 429, anything else
 * (outage, timeout, refused token, unknown object) is the provider's 502.
 */
function syncProblem(error: ProviderError): HttpProblem {
  const mapped = error.toProblem();
  if (mapped.status === 429) return mapped;
  const extra = error.code !== null ? { provider_code: error.code } : {};
  const why =
    error.kind === 'invalid_response' ? `The provider's catalog list could not be used (${error.message})` : 'The provider did not return the catalogs';
  return new HttpProblem(502, 'provider-error', `${why}; the previous copy is kept.`, extra);
}

const syncCatalogs: Handler<operations['syncCatalogs']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const db = platform.store.db;
  const account = await findAccount(db, workspaceId, request.params.waba_id);
  let fetched: FetchedCatalog[];
  try {
    fetched = await withProvider(platform, account, async ({ provider, account: handle }) => {
      const out: FetchedCatalog[] = [];
      for (const catalog of await provider.listCatalogs(handle)) out.push({ catalog, products: await provider.listProducts(handle, catalog.id) });
      return out;
    });
  } catch (error) {
    if (error instanceof ProviderError) throw syncProblem(error);
    throw error;
  }
  const now = platform.now();
  const result = await db.transaction().execute(async (trx) => {
    await trx.selectFrom('business_accounts').select('id').where('id', '=', account.id).forUpdate().execute();
    return applyCatalogs(trx, account, fetched, now);
  });
  return { waba_id: account.id, catalogs: result.catalogs.map(catalogView), removed_catalog_ids: result.removed, synced_at: now.toISOString() };
};

const listCatalogProducts: Handler<operations['listCatalogProducts']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const db = platform.store.db;
  const { search, availability, limit = 20, cursor } = (request.query ?? {}) as ListQuery;
  const catalog = await findCatalog(db, workspaceId, request.params.catalog_id);
  if (!catalog) throw catalogNotFound(request.params.catalog_id);
  // The cursor is bound to the catalog and filters too: a page of one listing never continues another.
  const scope = { workspaceId, operation: `listCatalogProducts:${catalog.id}:${availability ?? ''}:${search ?? ''}` };
  const after = decodeCursor(platform.secrets, scope, cursor);
  if (after && (typeof after.n !== 'string' || typeof after.id !== 'string')) throw invalidCursor();
  let query = db.selectFrom('catalog_products').selectAll().where('catalog_id', '=', catalog.id);
  if (availability) query = query.where('availability', '=', availability);
  if (search) {
    // strpos matches the text literally: no LIKE wildcards to escape.
    const needle = search.toLowerCase();
    query = query.where((eb) => eb.or([eb(sql`strpos(lower(name), ${needle})`, '>', 0), eb(sql`strpos(lower(retailer_id), ${needle})`, '>', 0)]));
  }
  if (after) query = query.where((eb) => eb(eb.refTuple('name', 'id'), '>', eb.tuple(String(after.n), String(after.id))));
  const rows = await query
    .orderBy('name')
    .orderBy('id')
    .limit(limit + 1)
    .execute();
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  const hasMore = rows.length > limit && last !== undefined;
  return {
    data: items.map(productView),
    has_more: hasMore,
    next_cursor: hasMore ? encodeCursor(platform.secrets, scope, { n: last.name, id: last.id }) : null,
  };
};

export const catalogHandlers = { syncCatalogs, listCatalogProducts };
