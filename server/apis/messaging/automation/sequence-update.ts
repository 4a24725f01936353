// Renaming, pausing and resuming a sequence. Pausing needs no work here: the timer worker holds
// the enrolments of an inactive sequence (sequences.ts). Resuming re-checks what creation checked
// and may have changed since: its templates (deleted, no longer approved) and its keyword.
import type { components, operations } from '#generated/messaging/types.js';
import { sql } from 'kysely';
import { authOf } from '#server/auth/authenticate.js';
import type { Handler } from '#server/lib/handler-types.js';
import { HttpProblem } from '#server/lib/problems.js';
import { announceDue } from './due.js';
import { refuse, refuseKeywordClash, templateFault, type Finding } from './sequence-create.js';
import { sequenceView } from './sequences.js';

type S = components['schemas'];

export const updateSequence: Handler<operations['updateSequence']> = async (request) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const db = platform.store.db;
  const { sequenceId } = request.params;
  const body = request.body;
  const current = await db
    .selectFrom('automation_sequences')
    .selectAll()
    .where('id', '=', sequenceId)
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirst();
  if (!current) throw new HttpProblem(404, 'not-found', `No sequence ${sequenceId} in this workspace.`);

  if (body.status === 'active' && current.status !== 'active') {
    const steps = current.steps as S['SequenceStep'][];
    const ids = [...new Set(steps.flatMap((s) => (s.template_id ? [s.template_id] : [])))];
    const templates = ids.length
      ? await db.selectFrom('message_templates').selectAll().where('workspace_id', '=', workspaceId).where('id', 'in', ids).execute()
      : [];
    const now = platform.now();
    const faults: Finding[] = [];
    for (const step of steps) {
      if (step.message_type !== 'template') continue;
      const template = templates.find((t) => t.id === step.template_id);
      const fault = template
        ? templateFault(template, step, current.business_account_id, true, now)
        : { pointer: '/template_id', detail: `Template ${step.template_id} no longer exists.` };
      if (fault) faults.push({ pointer: '/body/status', detail: `step ${step.position}: ${fault.detail}` });
    }
    if (faults.length) throw refuse(422, faults, 'The sequence cannot be activated: some steps could not be sent.');
    const trigger = current.trigger as S['SequenceTrigger'];
    if (trigger.type === 'keyword' && trigger.keyword)
      await refuseKeywordClash(db, workspaceId, current.business_account_id, trigger.keyword, '/body/status', current.id);
  }

  const changes = { ...(body.name !== undefined ? { name: body.name } : {}), ...(body.status !== undefined ? { status: body.status } : {}) };
  const changed = Object.entries(changes).some(([k, v]) => current[k as keyof typeof current] !== v);
  const row = changed
    ? await db
        .updateTable('automation_sequences')
        .set({ ...changes, updated_at: platform.now() })
        .where('id', '=', current.id)
        .where('workspace_id', '=', workspaceId)
        .returningAll()
        .executeTakeFirstOrThrow()
    : current;
  // Activated: the timer workers watch contacts and tags for it again (sequences.ts).
  if (changed && row.status === 'active' && current.status !== 'active') await announceDue(platform);
  const counts = await db
    .selectFrom('automation_sequence_enrolments')
    .select(['status', sql<string>`count(*)`.as('n')])
    .where('sequence_id', '=', row.id)
    .groupBy('status')
    .execute();
  const count = (s: string) => Number(counts.find((c) => c.status === s)?.n ?? 0);
  return sequenceView(row, count('active'), count('completed'));
};
