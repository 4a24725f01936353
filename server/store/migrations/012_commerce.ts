// Commerce: product catalogs mirrored from the provider, inbound order webhooks of storefronts
// (signing secret encrypted: it must verify), the template each order event sends, and a log of
// received order events whose unique keys make a delivery, or an order's event, send once.
import type { Kysely } from 'kysely';
import { runStatements } from './run.js';

export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(
    db,
    `
    create table catalogs (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      business_account_id text not null references business_accounts(id) on delete cascade,
      provider_catalog_id text not null,
      name text not null,
      product_count integer not null default 0,
      products_added integer not null default 0,
      products_updated integer not null default 0,
      products_removed integer not null default 0,
      synced_at timestamptz not null,
      created_at timestamptz not null,
      unique (business_account_id, provider_catalog_id)
    );
    create index catalogs_workspace on catalogs(workspace_id);

    create table catalog_products (
      id text primary key,
      catalog_id text not null references catalogs(id) on delete cascade,
      provider_product_id text not null,
      retailer_id text not null,
      name text not null,
      description text,
      price bigint,
      sale_price bigint,
      currency text not null,
      availability text not null,
      image_url text,
      url text,
      updated_at timestamptz not null,
      unique (catalog_id, provider_product_id)
    );
    create index catalog_products_listing on catalog_products(catalog_id, name, id);
    create index catalog_products_retailer on catalog_products(catalog_id, retailer_id);

    create table order_webhooks (
      id text primary key,
      workspace_id text not null references workspaces(id) on delete cascade,
      business_account_id text not null references business_accounts(id) on delete cascade,
      phone_number_id text references phone_numbers(id) on delete set null,
      platform text not null,
      name text not null,
      default_country text,
      secret_enc text not null,
      secret_last4 text not null,
      last_received_at timestamptz,
      created_at timestamptz not null,
      updated_at timestamptz not null
    );
    create index order_webhooks_workspace on order_webhooks(workspace_id);

    create table order_webhook_mappings (
      order_webhook_id text not null references order_webhooks(id) on delete cascade,
      event text not null,
      template_id text not null references message_templates(id) on delete cascade,
      language text not null,
      variables jsonb not null,
      enabled boolean not null,
      updated_at timestamptz not null,
      primary key (order_webhook_id, event)
    );

    -- One row per verified order event. order_key (platform order id + event) sends an order's
    -- event once however often it arrives; delivery_id (the platform's) catches plain retries.
    -- Both are null for events that can send nothing, and nulls never conflict.
    create table order_webhook_receipts (
      id bigserial primary key,
      order_webhook_id text not null references order_webhooks(id) on delete cascade,
      workspace_id text not null references workspaces(id) on delete cascade,
      delivery_id text,
      order_key text,
      platform_order_id text,
      topic text,
      event text,
      action text not null,
      message_id text,
      customer jsonb,
      detail text,
      received_at timestamptz not null
    );
    create unique index order_webhook_receipts_order on order_webhook_receipts(order_webhook_id, order_key);
    create unique index order_webhook_receipts_delivery on order_webhook_receipts(order_webhook_id, delivery_id);
    create index order_webhook_receipts_by_order on order_webhook_receipts(order_webhook_id, platform_order_id, id);
  `,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await runStatements(db, 'drop table order_webhook_receipts, order_webhook_mappings, order_webhooks, catalog_products, catalogs');
}
