// DELETE /api/templates/{id}: 409 while a campaign, order webhook or automation uses the template
// (contacts/usage.ts); otherwise deleted at the provider first (that language only), then here. A
// provider refusal answers its problem and leaves the template as it was.
import type { operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import type { Handler } from '#server/lib/handler-types.js';
import { HttpProblem } from '#server/lib/problems.js';
import { ProviderError, type ProviderKind } from '#server/providers/types.js';
import { inUse, templateUser } from '../contacts/usage.js';

export const deleteTemplate: Handler<operations['deleteTemplate']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  const db = platform.store.db;
  const { id } = request.params;
  const template = await db
    .selectFrom('message_templates as t')
    .innerJoin('business_accounts as a', 'a.id', 't.business_account_id')
    .select(['t.id', 't.name', 't.language', 't.provider_template_id', 'a.kind', 'a.provider_waba_id', 'a.access_token_enc'])
    .where('t.workspace_id', '=', workspaceId)
    .where('t.id', '=', id)
    .executeTakeFirst();
  if (!template) throw new HttpProblem(404, 'not-found', `No template ${id} in this workspace.`);
  const user = await templateUser(db, workspaceId, id);
  if (user) throw inUse(`Template ${template.name} (${template.language})`, user);
  const provider = platform.provider(template.kind as ProviderKind);
  const account = {
    wabaId: template.provider_waba_id,
    accessToken: template.access_token_enc ? platform.secrets.decrypt(template.access_token_enc) : null,
  };
  try {
    await provider.deleteTemplate(account, { name: template.name, id: template.provider_template_id });
  } catch (error) {
    throw error instanceof ProviderError ? error.toProblem() : error;
  }
  await db.deleteFrom('message_templates').where('workspace_id', '=', workspaceId).where('id', '=', id).execute();
  return reply.code(204).send();
};
