// Whether a flow's trigger matches an inbound message. Used by real runs (responder 20) and by
// dry runs, so a test answers exactly what a real message would do.
import { normalizeKeyword, normalizeKeywordKeepingCase } from '#server/lib/keywords.js';
import type { FlowTrigger } from './validate.js';

export interface TriggerInput {
  /** The contract's MessageKind of the inbound message (`text`, `interactive`, `button`, …). */
  type: string;
  text: string | null;
  replyId: string | null;
  /** Whether this is the contact's first message ever. */
  firstMessage: boolean;
}

const KIND: Record<string, string> = { button: 'interactive', sticker: 'image' };

/** The shared keyword normaliser (lib/keywords.ts); case and accents kept when case-sensitive. */
function normalise(s: string, caseSensitive: boolean): string {
  return caseSensitive ? normalizeKeywordKeepingCase(s) : normalizeKeyword(s);
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export function triggerMatches(trigger: FlowTrigger, m: TriggerInput): boolean {
  const p = trigger.parameters as Record<string, any>;
  switch (trigger.type) {
    case 'message_received': {
      if (p.new_contacts_only && !m.firstMessage) return false;
      const types = p.message_types as string[] | undefined;
      return !types?.length || types.includes(KIND[m.type] ?? m.type);
    }
    case 'keyword': {
      if (m.type !== 'text' || !m.text) return false;
      const cs = p.case_sensitive === true;
      const text = normalise(m.text, cs);
      return (p.keywords as string[]).some((k) => {
        const kw = normalise(k, cs);
        if (!kw) return false;
        switch (p.match ?? 'exact') {
          case 'contains':
            // A whole word: not preceded or followed by a letter or digit (any script).
            return new RegExp(`(?<![\\p{L}\\p{N}])${escapeRegExp(kw)}(?![\\p{L}\\p{N}])`, 'u').test(text);
          case 'starts_with':
            return text.startsWith(kw);
          default:
            return text === kw;
        }
      });
    }
    case 'button_reply':
      return m.replyId !== null && (p.button_ids as string[]).includes(m.replyId);
    default:
      return false;
  }
}
