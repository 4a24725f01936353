// Row types of the industry-pack tables (migration 015).
import type { ColumnType } from 'kysely';

type Timestamp = ColumnType<Date, Date | string, Date | string>;

export type PackItemKind = 'template' | 'tag' | 'custom_field' | 'quick_reply' | 'flow' | 'funnel';

export interface IndustryPackApplicationsTable {
  workspace_id: string;
  business_account_id: string;
  slug: string;
  version: string;
  first_applied_at: Timestamp;
  last_applied_at: Timestamp;
}

export interface IndustryPackItemsTable {
  workspace_id: string;
  business_account_id: string;
  slug: string;
  kind: PackItemKind;
  key: string;
  resource_id: string;
  created_at: Timestamp;
}

export interface PackTables {
  industry_pack_applications: IndustryPackApplicationsTable;
  industry_pack_items: IndustryPackItemsTable;
}
