// The timer worker's wake-up (./timers.ts): a write that creates automation work due at a time
// (an enrolment, an activated sequence) announces it on every instance. The payload is the due
// time in epoch milliseconds, or empty for "re-read the sequences": a worker already awake
// before that time ignores it. The rows stay the truth; a lost notification only delays until
// the worker's idle re-check.
import type { Platform } from '#server/platform.js';

export const TIMERS_CHANNEL = 'automation_due';

export function announceDue(platform: Platform, at?: Date): Promise<void> {
  return platform.store.notify(TIMERS_CHANNEL, at ? String(at.getTime()) : '');
}
