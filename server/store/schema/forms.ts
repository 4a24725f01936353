// Row types of the forms tables (migration 014): forms with their provider Flow, submissions.
import type { ColumnType, Generated } from 'kysely';

type Timestamp = ColumnType<Date, Date | string, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
/** jsonb: read parsed, written as a JSON string. */
type Json<T> = ColumnType<T, string, string>;

export type FormFieldTypeValue = 'text' | 'textarea' | 'email' | 'phone' | 'number' | 'date' | 'dropdown' | 'radio' | 'checkbox' | 'opt_in';

export interface FormFieldRow {
  name: string;
  label: string;
  type: FormFieldTypeValue;
  required: boolean;
  options?: { id: string; title: string }[];
  helper_text?: string;
  custom_field?: string;
}

export type FormFlowStatusValue = 'DRAFT' | 'PUBLISHED' | 'DEPRECATED' | 'BLOCKED' | 'THROTTLED';

export interface FormsTable {
  id: string;
  workspace_id: string;
  business_account_id: string;
  name: string;
  category: string;
  title: string;
  submit_label: string;
  fields: Json<FormFieldRow[]>;
  provider_flow_id: string;
  flow_status: FormFlowStatusValue;
  submission_count: Generated<number>;
  published_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface FormSubmissionsTable {
  id: string;
  workspace_id: string;
  form_id: string;
  contact_id: string;
  message_id: string;
  answers: Json<Record<string, unknown>>;
  created_at: Timestamp;
}

export interface FormTables {
  forms: FormsTable;
  form_submissions: FormSubmissionsTable;
}
