// POST /api/chatapp/send: every checked before the provider is called (sender, recipient, reply,
// template, media URLs, a device file's bytes, the 24-hour window), then a device file is
// uploaded, the message row is written `pending`, the provider called, and the row settled:
// `accepted` with its wamid, `unknown` after a timeout (never re-sent blindly: a status webhook
// settles it), `failed` with the provider's error. This handler reads the JSON body or the
// multipart form and keeps the Idempotency-Key; the send itself is outbound/deliver.ts.
import type { components, operations } from '#generated/messaging/types.js';
import { authOf } from '#server/auth/authenticate.js';
import type { Handler } from '#server/lib/handler-types.js';
import { HttpProblem } from '#server/lib/problems.js';
import type { MediaKind } from '../media/rules.js';
import { deviceFile, formFields, UploadTimeoutProblem } from '../media/uploads.js';
import { deliver } from '../outbound/deliver.js';
import type { DeviceSend } from '../outbound/parts.js';
import { beginIdempotent, finishIdempotent, type IdempotencyClaim } from './idempotency.js';

type Body = components['schemas']['SendMessageRequest'];

const field = (pointer: string, detail: string) => new HttpProblem(400, 'validation', detail, { errors: [{ pointer, detail }] });

export const sendMessage: Handler<operations['sendMessage']> = async (request, reply) => {
  const { workspaceId } = authOf(request);
  const platform = request.server.platform;
  let body: Body | DeviceSend;
  let digestOf: Buffer;
  if (request.isMultipart()) {
    // The form and the file's bytes are checked here; the upload waits for the 24-hour rule.
    const fields = formFields(request, ['contact_no', 'chatapp_phone_number', 'messageType', 'message', 'filename', 'reply_to']);
    const kind = fields.messageType as MediaKind;
    if (kind === 'audio' && fields.message !== undefined) throw field('/body/message', 'Audio has no caption.');
    if (kind !== 'document' && fields.filename !== undefined) throw field('/body/filename', 'Only documents have a file name.');
    const file = await deviceFile(request, kind);
    body = { ...(fields as Omit<DeviceSend, 'file' | 'messageType'>), messageType: kind, file };
    // The same form with the same bytes is the same request.
    digestOf = Buffer.from(JSON.stringify({ ...fields, file_sha256: file.sha256 }));
  } else {
    body = request.body as Body;
    digestOf = request.rawBody ?? Buffer.from(JSON.stringify(body));
  }
  const key = request.headers['idempotency-key'];
  let claim: IdempotencyClaim | null = null;
  if (typeof key === 'string' && key !== '') {
    const begun = await beginIdempotent(platform, workspaceId, key, digestOf);
    if ('replay' in begun) {
      reply.code(begun.replay.status).header('idempotent-replayed', 'true');
      if (begun.replay.status >= 400) reply.type('application/problem+json');
      return reply.send(begun.replay.body);
    }
    claim = begun.claim;
  }
  try {
    const result = await deliver(platform, workspaceId, body);
    if (claim) await finishIdempotent(platform, claim, 201, result);
    reply.code(201);
    return result;
  } catch (error) {
    // A settled provider failure is replayed like a success (a retry must not send again);
    // refusals before the provider call and rate limits leave the key free for a retry.
    if (claim) {
      const settled = error instanceof HttpProblem && error.problem.provider_code !== undefined && error.status !== 429;
      const timedOut = error instanceof HttpProblem && error.status === 504 && !(error instanceof UploadTimeoutProblem);
      await finishIdempotent(
        platform,
        claim,
        settled || timedOut ? (error as HttpProblem).status : null,
        settled || timedOut ? (error as HttpProblem).problem : null,
      );
    }
    throw error;
  }
};
