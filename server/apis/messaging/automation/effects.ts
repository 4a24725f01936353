// The effects of a real run: sends through `deliver` (text, media, templates: the API's own
// path, 24-hour rule included) or sendInteractive, tag and field writes, the SSRF-safe HTTP
// client, chat assignment. Refusals become NodeFailure with the contract's error codes.
import { sql } from 'kysely';
import { HttpProblem } from '#server/lib/problems.js';
import { FetchFailedError, UnsafeUrlError } from '#server/lib/safe-fetch.js';
import type { Platform } from '#server/platform.js';
import { ProviderError } from '#server/providers/types.js';
import { loadFieldDefinitions, mergeCustomValues } from '../contacts/custom-values.js';
import { ensureChat } from '../chats.js';
import { formByFlowId } from '../forms/by-flow-id.js';
import { deliver } from '../outbound/deliver.js';
import type { ContactState } from './contact-state.js';
import { NodeFailure, type Effects, type ExecutionError, type HttpOutcome, type Outbound, type SendBody } from './engine.js';
import { sendInteractive } from './interactive-send.js';

export interface RunTarget {
  workspaceId: string;
  phoneNumberId: string;
  contact: ContactState & { id: string; phone: string };
}

/** An HttpProblem of a send as the execution error the contract lists. */
export function sendError(error: unknown, nodeId: string | null): ExecutionError | null {
  if (!(error instanceof HttpProblem)) return null;
  const p = error.problem as { type: string; detail?: string; provider_code?: number };
  const name = p.type.split('/').pop();
  let message = p.detail ?? error.message;
  // The provider's own answer, when it answered: its HTTP status and what it said.
  const cause = error.cause instanceof ProviderError ? error.cause : null;
  const status = cause?.httpStatus != null ? { http_status: cause.httpStatus } : {};
  if (cause?.details && !message.includes(cause.details)) message = `${message} (${cause.details})`;
  if (name === 'outside-window') return { code: 'outside_window', message, node_id: nodeId, ...status };
  if (name === 'unsafe-url') return { code: 'unsafe_url', message, node_id: nodeId };
  if (cause?.kind === 'timeout') return { code: 'timeout', message, node_id: nodeId };
  if (p.provider_code !== undefined) return { code: 'provider_error', message, node_id: nodeId, provider_code: p.provider_code, ...status };
  if (cause) return { code: 'provider_error', message, node_id: nodeId, ...status };
  if (/template/i.test(message) && /approved/i.test(message)) return { code: 'template_not_approved', message, node_id: nodeId };
  // Our own refusal: the field it names (the node's expanded message, or the send's body).
  const field = (p as { errors?: { pointer?: string }[] }).errors?.[0]?.pointer;
  return { code: 'send_refused', message: field ? `${message} (${field})` : message, node_id: nodeId };
}

export function realEffects(platform: Platform, target: RunTarget): Effects {
  const db = platform.store.db;
  const { workspaceId, phoneNumberId, contact } = target;
  return {
    dry: false,
    async send(nodeId: string, out: Outbound) {
      try {
        if ('body' in out) {
          const result = await deliver(platform, workspaceId, { ...out.body, contact_no: contact.phone, chatapp_phone_number: phoneNumberId } as SendBody);
          return result.id;
        }
        return await sendInteractive(platform, workspaceId, phoneNumberId, contact.id, out.message, out.preview);
      } catch (error) {
        const mapped = sendError(error, nodeId);
        if (mapped) throw new NodeFailure(mapped);
        throw error;
      }
    },
    async addTag(tagId) {
      const tag = await db.selectFrom('tags').select('id').where('id', '=', tagId).where('workspace_id', '=', workspaceId).executeTakeFirst();
      if (!tag) throw new NodeFailure({ code: 'reference_missing', message: `Tag ${tagId} no longer exists.`, node_id: null });
      await db
        .insertInto('contact_tags')
        .values({ contact_id: contact.id, tag_id: tagId })
        .onConflict((oc) => oc.doNothing())
        .execute();
    },
    async removeTag(tagId) {
      await db.deleteFrom('contact_tags').where('contact_id', '=', contact.id).where('tag_id', '=', tagId).execute();
    },
    async setField(field, value) {
      const now = platform.now();
      if (field === 'name' || field === 'email') {
        await db
          .updateTable('contacts')
          .set({ [field]: value === '' ? null : value.slice(0, 256), updated_at: now })
          .where('id', '=', contact.id)
          .execute();
        contact[field] = value === '' ? null : value;
        return;
      }
      const defs = await loadFieldDefinitions(db, workspaceId);
      const def = defs.get(field);
      const typed = value === '' ? null : def?.type === 'number' && Number.isFinite(Number(value)) ? Number(value) : value;
      try {
        await db.transaction().execute(async (trx) => {
          // Locked so that two runs setting fields of one contact do not lose each other's writes.
          const row = await trx.selectFrom('contacts').select('custom_fields').where('id', '=', contact.id).forUpdate().executeTakeFirstOrThrow();
          const merged = mergeCustomValues(row.custom_fields ?? {}, { [field]: typed }, defs, '/parameters');
          await trx
            .updateTable('contacts')
            .set({ custom_fields: JSON.stringify(merged), updated_at: now })
            .where('id', '=', contact.id)
            .execute();
          contact.fields = merged;
        });
      } catch (error) {
        if (error instanceof HttpProblem) throw new NodeFailure({ code: 'invalid_field_value', message: error.message, node_id: null });
        throw error;
      }
    },
    async http({ method, url, headers, body, timeoutMs }): Promise<HttpOutcome> {
      if (platform.config.production && !url.startsWith('https://'))
        return { ok: false, status: null, json: null, detail: 'refused: only https URLs are allowed', failure: 'refused' };
      let timer: NodeJS.Timeout | undefined;
      try {
        // webhookFetch bounds the exchange at 10 s and 64 KB and follows no redirect; the
        // node's own timeout is shorter.
        const response = await Promise.race([
          platform.webhookFetch(url, {
            method,
            headers: { accept: 'application/json', ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
            ...(body !== undefined ? { body } : {}),
          }),
          new Promise<never>(
            (_, reject) => (timer = setTimeout(() => reject(new FetchFailedError('timeout', `no response within ${timeoutMs} ms`)), timeoutMs)),
          ),
        ]);
        if (response.truncated)
          return { ok: false, status: response.status, json: null, detail: `HTTP ${response.status}: the response is larger than 64 KB`, failure: 'http' };
        const text = response.body.toString('utf8');
        let json: unknown = text;
        try {
          json = text ? JSON.parse(text) : null;
        } catch {
          // not JSON: kept as text
        }
        const ok = response.status >= 200 && response.status < 300;
        return { ok, status: response.status, json, detail: `HTTP ${response.status}`, ...(ok ? {} : { failure: 'http' as const }) };
      } catch (error) {
        if (error instanceof UnsafeUrlError) return { ok: false, status: null, json: null, detail: `refused: ${error.reason}`, failure: 'refused' };
        if (error instanceof FetchFailedError)
          return { ok: false, status: null, json: null, detail: `failed: ${error.message}`, failure: error.reason === 'timeout' ? 'timeout' : 'network' };
        throw error;
      } finally {
        clearTimeout(timer);
      }
    },
    async assign({ strategy, agentId, note }) {
      const now = platform.now();
      let agent: string | undefined;
      if (strategy === 'specific') {
        agent = (await db.selectFrom('owners').select('id').where('id', '=', agentId!).where('workspace_id', '=', workspaceId).executeTakeFirst())?.id;
        if (!agent) throw new NodeFailure({ code: 'reference_missing', message: `Agent ${agentId} no longer exists.`, node_id: null });
      } else {
        // Agents are the workspace's owners. Round robin: the one assigned longest ago (or never);
        // least busy: the one with the fewest assigned chats.
        const rows = await db
          .selectFrom('owners')
          .leftJoin('chats', (j) => j.onRef('chats.assigned_owner_id', '=', 'owners.id'))
          .select(['owners.id', sql<string>`count(chats.id)`.as('open'), sql<Date | null>`max(chats.assigned_at)`.as('last')])
          .where('owners.workspace_id', '=', workspaceId)
          .groupBy('owners.id')
          .execute();
        rows.sort((a, b) =>
          strategy === 'least_busy'
            ? Number(a.open) - Number(b.open) || a.id.localeCompare(b.id)
            : (a.last ? new Date(a.last).getTime() : 0) - (b.last ? new Date(b.last).getTime() : 0) || a.id.localeCompare(b.id),
        );
        agent = rows[0]?.id;
        if (!agent) throw new NodeFailure({ code: 'reference_missing', message: 'The workspace has no agent.', node_id: null });
      }
      const chatId = await ensureChat(db, workspaceId, phoneNumberId, contact.id, now);
      await db.updateTable('chats').set({ assigned_owner_id: agent, assigned_at: now }).where('id', '=', chatId).execute();
      return `assigned to ${agent}${note ? ` (note: ${note.slice(0, 200)})` : ''}`;
    },
    form: (flowId) => formByFlowId(db, workspaceId, flowId),
    async template(templateId) {
      return (
        (await db
          .selectFrom('message_templates')
          .select(['name', 'status'])
          .where('id', '=', templateId)
          .where('workspace_id', '=', workspaceId)
          .executeTakeFirst()) ?? null
      );
    },
  };
}
