// Product carousels of campaigns: every card's catalog must be a synced catalog of the workspace
// (404 otherwise, the same as an unknown id) and its product a product of that catalog (422
// naming the card). At send time our catalog ids become the provider's.
import type { Kysely } from 'kysely';
import { HttpProblem } from '#server/lib/problems.js';
import type { Database } from '#server/store/schema.js';

export interface ProductCard {
  catalog_id: string;
  product_retailer_id: string;
}

const pointer = (i: number, field: string) => `/body/template/carousel/cards/${i}/${field}`;

/**
 * Checks the cards against the synced catalogs. With `businessAccountId` (the sender's account)
 * a catalog of another account of the workspace is a 422: the provider would refuse it.
 */
export async function checkProductCards(db: Kysely<Database>, workspaceId: string, cards: ProductCard[], businessAccountId?: string): Promise<void> {
  const ids = [...new Set(cards.map((c) => c.catalog_id))];
  const catalogs = ids.length
    ? await db.selectFrom('catalogs').select(['id', 'business_account_id']).where('workspace_id', '=', workspaceId).where('id', 'in', ids).execute()
    : [];
  const known = new Map(catalogs.map((c) => [c.id, c.business_account_id]));
  for (const [i, card] of cards.entries()) {
    if (!known.has(card.catalog_id)) {
      throw new HttpProblem(404, 'not-found', `No catalog ${card.catalog_id} in this workspace.`, {
        errors: [{ pointer: pointer(i, 'catalog_id'), detail: 'is not a catalog of this workspace' }],
      });
    }
    if (businessAccountId && known.get(card.catalog_id) !== businessAccountId) {
      throw new HttpProblem(422, 'unprocessable', `Catalog ${card.catalog_id} belongs to another business account than the sender number's.`, {
        errors: [{ pointer: pointer(i, 'catalog_id'), detail: "is not a catalog of the sender's business account" }],
      });
    }
  }
  const products = await db
    .selectFrom('catalog_products')
    .select(['catalog_id', 'retailer_id'])
    .where('catalog_id', 'in', ids)
    .where('retailer_id', 'in', [...new Set(cards.map((c) => c.product_retailer_id))])
    .execute();
  const have = new Set(products.map((p) => `${p.catalog_id}\0${p.retailer_id}`));
  for (const [i, card] of cards.entries()) {
    if (!have.has(`${card.catalog_id}\0${card.product_retailer_id}`)) {
      throw new HttpProblem(
        422,
        'unprocessable',
        `Card ${i + 1}: catalog ${card.catalog_id} has no product ${card.product_retailer_id} (sync the catalog if it is new).`,
        {
          errors: [{ pointer: pointer(i, 'product_retailer_id'), detail: 'is not a product of this catalog' }],
        },
      );
    }
  }
}

/**
 * Our catalog ids of the cards → the provider's, for the worker. A catalog removed since the
 * campaign was created, or one of another account than the sender's, yields a failure reason.
 */
export async function providerCatalogIds(
  db: Kysely<Database>,
  workspaceId: string,
  businessAccountId: string,
  cards: ProductCard[],
): Promise<Map<string, string> | { failure: string }> {
  const ids = [...new Set(cards.map((c) => c.catalog_id))];
  const rows = ids.length
    ? await db
        .selectFrom('catalogs')
        .select(['id', 'provider_catalog_id', 'business_account_id'])
        .where('workspace_id', '=', workspaceId)
        .where('id', 'in', ids)
        .execute()
    : [];
  const map = new Map(rows.filter((r) => r.business_account_id === businessAccountId).map((r) => [r.id, r.provider_catalog_id]));
  const missing = ids.find((id) => !map.has(id));
  if (missing) return { failure: `Catalog ${missing} is no longer a catalog of the sender's business account.` };
  return map;
}
