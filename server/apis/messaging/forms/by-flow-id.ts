// A form of the workspace by its provider Flow id (`flow.flow_id`), as a flow's `start_form` node
// names it: what sending it needs (published or not, the screen it opens on) and, for the
// sandbox phone, its fields.
import type { Kysely } from 'kysely';
import type { Database } from '#server/store/schema.js';
import { FIRST_SCREEN } from './flow-json.js';

export interface SendableForm {
  id: string;
  status: string;
  /** The screen the Flow message opens (`flow_action_payload.screen`). */
  firstScreen: string;
}

export async function formByFlowId(db: Kysely<Database>, workspaceId: string, flowId: string): Promise<SendableForm | null> {
  const row = await db
    .selectFrom('forms')
    .select(['id', 'flow_status'])
    .where('workspace_id', '=', workspaceId)
    .where('provider_flow_id', '=', flowId)
    .executeTakeFirst();
  return row ? { id: row.id, status: row.flow_status, firstScreen: FIRST_SCREEN } : null;
}
