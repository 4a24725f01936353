// Links that open only for the recipient's phone (`require_phone_verification`): before the viewer
// opens, the reader verifies a number with the Login flow, a LOGIN message on the shared service
// number, through a Login session of the workspace's own "Verified links" app (made on first use,
// `purpose = 'verified_links'`, not listed among the owner's apps, its API key never kept). The
// session's id rides in a signed httpOnly cookie scoped to the link's path (`/l/<slug>`, so that
// it also covers the file). The document opens only when the verified phone equals the link's
// recipient phone; another number gets a refusal and may try again.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type {} from '@fastify/cookie';
import QRCode from 'qrcode';
import { SANDBOX_PHONE_PATH, sandboxPhoneServed } from '#server/html/demo-layout.js';
import { newId, newSecret } from '#server/lib/ids.js';
import { createLoginSession, waLink } from '#server/apis/login/sessions.js';
import type { Platform } from '#server/platform.js';
import type { LinkRow } from './views.js';
import { VIEWER_PREFIX, type VerifyPage } from './viewer-page.js';

const COOKIE = (production: boolean) => (production ? '__Secure-deepLinkphone' : 'deepLinkphone');
/** How long a verified number keeps opening the link in this browser. */
const VERIFIED_FOR_S = 24 * 60 * 60;

/** What the viewer does for a request on a phone-verified link. */
export type Gate = { kind: 'open'; phone: string } | { kind: 'verify'; page: VerifyPage } | { kind: 'refused'; phone: string; retryUrl: string };

/** The workspace's "Verified links" Login app, on the shared service number; created once. */
async function verifiedLinksApp(platform: Platform, workspaceId: string) {
  const db = platform.store.db;
  const find = () => db.selectFrom('login_apps').selectAll().where('workspace_id', '=', workspaceId).where('purpose', '=', 'verified_links').executeTakeFirst();
  const existing = await find();
  if (existing) return existing;
  return db.transaction().execute(async (trx) => {
    // The workspace row lock makes concurrent first readers create one app.
    await trx.selectFrom('workspaces').select('id').where('id', '=', workspaceId).forUpdate().executeTakeFirstOrThrow();
    const again = await trx
      .selectFrom('login_apps')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .where('purpose', '=', 'verified_links')
      .executeTakeFirst();
    if (again) return again;
    const now = platform.now();
    const apiKey = newSecret('lk_live_'); // never shown nor kept: no one calls the API with it
    const webhookSecret = newSecret('whsec_');
    return trx
      .insertInto('login_apps')
      .values({
        id: newId('app'),
        workspace_id: workspaceId,
        name: 'Verified links',
        purpose: 'verified_links',
        use_service_phone: true,
        webhook_destination: 'none',
        api_key_prefix: apiKey.slice(0, 12),
        api_key_digest: platform.secrets.digest(apiKey),
        webhook_secret_prefix: webhookSecret.slice(0, 10),
        webhook_secret_enc: platform.secrets.encrypt(webhookSecret),
        created_at: now,
        updated_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
  });
}

function readSessionId(request: FastifyRequest): string | null {
  const raw = request.cookies?.[COOKIE(request.server.config.production)];
  if (!raw) return null;
  const unsigned = request.unsignCookie(raw);
  return unsigned.valid && unsigned.value && /^ls_[0-9A-Za-z]{8,48}$/.test(unsigned.value) ? unsigned.value : null;
}

function writeSessionId(request: FastifyRequest, reply: FastifyReply, slug: string, sessionId: string | null): void {
  const name = COOKIE(request.server.config.production);
  const path = `${VIEWER_PREFIX}/${slug}`;
  if (!sessionId) {
    reply.clearCookie(name, { path });
    return;
  }
  reply.setCookie(name, sessionId, {
    path,
    httpOnly: true,
    sameSite: 'lax',
    secure: request.server.config.production,
    signed: true,
    maxAge: VERIFIED_FOR_S,
  });
}

/** "Verify another number": this browser's Login session for the link is dropped (the next view starts one). */
export function forgetVerification(request: FastifyRequest, reply: FastifyReply, slug: string): void {
  writeSessionId(request, reply, slug, null);
}

/** The Login session of this browser for `link`, if it belongs to the link's workspace. */
async function currentSession(platform: Platform, link: LinkRow, sessionId: string | null) {
  if (!sessionId) return undefined;
  return platform.store.db
    .selectFrom('login_sessions as s')
    .innerJoin('login_apps as a', 'a.id', 's.app_id')
    .innerJoin('phone_numbers as pn', 'pn.id', 's.phone_number_id')
    .innerJoin('business_accounts as ba', 'ba.id', 'pn.business_account_id')
    .select(['s.id', 's.status', 's.expires_at', 's.phone', 's.login_code', 's.verified_at', 'pn.display_phone_number', 'ba.kind'])
    .where('s.id', '=', sessionId)
    .where('s.workspace_id', '=', link.workspace_id)
    .where('a.purpose', '=', 'verified_links')
    .executeTakeFirst();
}

/** The verified phone this browser holds for `link` (the file route's check), or null. */
export async function verifiedPhone(request: FastifyRequest, link: LinkRow): Promise<string | null> {
  const session = await currentSession(request.server.platform, link, readSessionId(request));
  return session?.status === 'success' && session.phone && session.phone === link.recipient_phone ? session.phone : null;
}

/**
 * The gate of `GET /l/<slug>` for a phone-verified link: open (the verified number is the
 * recipient's), refused (another number), or the verification page, starting a Login session when
 * this browser has none pending. Link previews get the page without a session.
 */
export async function phoneGate(
  server: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  link: LinkRow,
  opts: { preview: boolean },
): Promise<Gate> {
  const { platform } = server;
  const now = platform.now();
  const session = await currentSession(platform, link, readSessionId(request));
  if (session?.status === 'success' && session.phone) {
    if (session.phone === link.recipient_phone) return { kind: 'open', phone: session.phone };
    return { kind: 'refused', phone: session.phone, retryUrl: `${VIEWER_PREFIX}/${link.slug}?retry=1` };
  }
  if (opts.preview) return { kind: 'verify', page: {} };
  const sandboxUrl = (kind: string, number: string, message: string) =>
    kind === 'sandbox' && sandboxPhoneServed(server.config) ? `${SANDBOX_PHONE_PATH}?${new URLSearchParams({ to: number, text: message })}` : null;
  if (session?.status === 'pending' && session.expires_at.getTime() > now.getTime()) {
    const number = `+${session.display_phone_number.replace(/\D/g, '')}`;
    const deepLink = waLink(number, session.login_code);
    const message = `LOGIN ${session.login_code}`;
    return {
      kind: 'verify',
      page: {
        login: {
          waLink: deepLink,
          qrCodeSvg: await QRCode.toString(deepLink, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 }),
          number,
          message,
          sandboxPhoneUrl: sandboxUrl(session.kind, number, message),
        },
      },
    };
  }
  const app = await verifiedLinksApp(platform, link.workspace_id);
  const started = await createLoginSession(server, app, {});
  writeSessionId(request, reply, link.slug, started.sessionId);
  const message = `LOGIN ${started.loginCode}`;
  const kind = await platform.store.db
    .selectFrom('login_sessions as s')
    .innerJoin('phone_numbers as pn', 'pn.id', 's.phone_number_id')
    .innerJoin('business_accounts as ba', 'ba.id', 'pn.business_account_id')
    .select('ba.kind')
    .where('s.id', '=', started.sessionId)
    .executeTakeFirstOrThrow();
  return {
    kind: 'verify',
    page: {
      login: {
        waLink: started.waLink,
        qrCodeSvg: started.qrCodeSvg,
        number: started.displayPhoneNumber,
        message,
        sandboxPhoneUrl: sandboxUrl(kind.kind, started.displayPhoneNumber, message),
      },
    },
  };
}
