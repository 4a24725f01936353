// The provider's rules shared by the send API, automation and the sandbox: what one reaction
// emoji is, and a contact card's name and birthday.
import { describe, expect, it } from 'vitest';
import { isReactionEmoji, messageViolations } from '#server/providers/message-rules.js';

describe('message rules', () => {
  it.each([
    ['', true],
    ['👍', true],
    ['❤️', true],
    ['👍🏽', true],
    ['👩‍👩‍👧', true],
    ['🇵🇹', true],
    ['👍👍', false],
    ['ok', false],
    ['a👍', false],
  ])('reaction emoji %j: %s', (emoji, ok) => {
    expect(isReactionEmoji(emoji)).toBe(ok);
  });

  it('a contact card: a name part besides formatted_name, a real birthday', () => {
    expect(messageViolations({ type: 'contacts', contacts: [{ name: { formatted_name: 'A', last_name: 'A' }, birthday: '2000-02-29' }] })).toEqual([]);
    expect(messageViolations({ type: 'contacts', contacts: [{ name: { formatted_name: 'A' }, birthday: '2001-02-29' }] }).map((v) => v.path)).toEqual([
      '/contacts/0/name',
      '/contacts/0/birthday',
    ]);
  });

  it('a body counts characters, not UTF-16 units: 1,024 emoji fit a button message', () => {
    const body = '😀'.repeat(1024);
    const m = (text: string) => ({
      type: 'interactive' as const,
      interactive: { type: 'location_request_message' as const, body: { text }, action: { name: 'send_location' as const } },
    });
    expect(messageViolations(m(body))).toEqual([]);
    expect(messageViolations(m(`${body}x`)).map((v) => v.path)).toEqual(['/interactive/body/text']);
  });

  it('a Flow opened with navigate names its screen; data_exchange takes none', () => {
    const flow = (parameters: Record<string, unknown>) => ({
      type: 'interactive' as const,
      interactive: {
        type: 'flow' as const,
        body: { text: 'Book' },
        action: { name: 'flow' as const, parameters: { flow_message_version: '3' as const, flow_id: '1', flow_cta: 'Open', ...parameters } },
      },
    });
    const screen = '/interactive/action/parameters/flow_action_payload/screen';
    expect(messageViolations(flow({})).map((v) => v.path)).toEqual([screen]);
    expect(messageViolations(flow({ flow_action: 'navigate', flow_action_payload: { data: { a: 1 } } })).map((v) => v.path)).toEqual([screen]);
    expect(messageViolations(flow({ flow_action: 'navigate', flow_action_payload: { screen: 'START' } }))).toEqual([]);
    expect(messageViolations(flow({ flow_action: 'data_exchange' }))).toEqual([]);
  });
});
