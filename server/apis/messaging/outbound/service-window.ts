// The customer-service window: a business may send free-form messages only within 24 hours of
// the customer's last message; outside it only an approved template. Checked before any
// provider call (bad-inputs H15).
import { HttpProblem } from '#server/lib/problems.js';

export const WINDOW_MS = 24 * 60 * 60 * 1000;

/** Whether the customer wrote within the last 24 hours. */
export function windowOpen(lastInboundAt: Date | string | null | undefined, now: Date): boolean {
  return !!lastInboundAt && now.getTime() - new Date(lastInboundAt).getTime() < WINDOW_MS;
}

/** The send API's rule: a message other than a template needs the window open (422 `outside-window`). */
export function requireOpenWindow(messageType: string, lastInboundAt: Date | string | null | undefined, now: Date): void {
  if (messageType === 'template' || windowOpen(lastInboundAt, now)) return;
  throw new HttpProblem(
    422,
    'outside-window',
    'The customer has not written in the last 24 hours: only an approved template can be sent (messageType "template"; see POST /api/template/create and GET /api/templates).',
    { errors: [{ pointer: '/body/messageType', detail: 'free-form messages need an open 24-hour window; send a template' }] },
  );
}
