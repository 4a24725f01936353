// Row types of the commerce tables (migration 012).
import type { ColumnType, Generated } from 'kysely';

type Timestamp = ColumnType<Date, Date | string, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
/** jsonb: read parsed, written as a JSON string. */
type Json<T> = ColumnType<T, string, string>;
/** bigint: read as a string by both drivers, written as a number. */
type BigInt = ColumnType<string | null, number | null, number | null>;

export interface CatalogsTable {
  id: string;
  workspace_id: string;
  business_account_id: string;
  provider_catalog_id: string;
  name: string;
  product_count: Generated<number>;
  products_added: Generated<number>;
  products_updated: Generated<number>;
  products_removed: Generated<number>;
  synced_at: Timestamp;
  created_at: Timestamp;
}

export interface CatalogProductsTable {
  id: string;
  catalog_id: string;
  provider_product_id: string;
  retailer_id: string;
  name: string;
  description: string | null;
  price: BigInt;
  sale_price: BigInt;
  currency: string;
  availability: string;
  image_url: string | null;
  url: string | null;
  updated_at: Timestamp;
}

export type OrderPlatform = 'shopify' | 'woocommerce' | 'custom';

export interface OrderWebhooksTable {
  id: string;
  workspace_id: string;
  business_account_id: string;
  phone_number_id: string | null;
  platform: OrderPlatform;
  name: string;
  default_country: string | null;
  secret_enc: string;
  secret_last4: string;
  last_received_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface VariableMapping {
  target: string;
  source: string;
  fallback?: string;
}

export interface OrderWebhookMappingsTable {
  order_webhook_id: string;
  event: string;
  template_id: string;
  language: string;
  variables: Json<VariableMapping[]>;
  enabled: boolean;
  updated_at: Timestamp;
}

export interface OrderWebhookReceiptsTable {
  id: Generated<string>;
  order_webhook_id: string;
  workspace_id: string;
  delivery_id: string | null;
  order_key: string | null;
  platform_order_id: string | null;
  topic: string | null;
  event: string | null;
  action: string;
  message_id: string | null;
  customer: ColumnType<Record<string, string | null> | null, string | null, string | null>;
  detail: string | null;
  received_at: Timestamp;
}

export interface CommerceTables {
  catalogs: CatalogsTable;
  catalog_products: CatalogProductsTable;
  order_webhooks: OrderWebhooksTable;
  order_webhook_mappings: OrderWebhookMappingsTable;
  order_webhook_receipts: OrderWebhookReceiptsTable;
}
