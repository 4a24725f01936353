// Why a send node failed, as its execution step records it: the provider's refusal with its code,
// HTTP status and words; a provider timeout; our own refusal of an expanded message.
import { describe, expect, it } from 'vitest';
import { HttpProblem } from '#server/lib/problems.js';
import { ProviderError } from '#server/providers/types.js';
import { sendError } from '#server/apis/messaging/automation/effects.js';
import { checkProviderRules } from '#server/apis/messaging/outbound/interactive.js';

describe('sendError', () => {
  it("a provider refusal: provider_error with the code, the provider's HTTP status and its words", () => {
    const refused = new ProviderError({ code: 131026, httpStatus: 400, message: '(#131026) Message undeliverable', details: 'Recipient is not on WhatsApp.' });
    expect(sendError(refused.toProblem(), 'send')).toEqual({
      code: 'provider_error',
      message: expect.stringContaining('Recipient is not on WhatsApp.'),
      node_id: 'send',
      provider_code: 131026,
      http_status: 400,
    });
  });

  it('a provider outage without a code: provider_error with the HTTP status', () => {
    const outage = new ProviderError({ httpStatus: 503, message: 'Service unavailable', details: 'upstream busy' });
    expect(sendError(outage.toProblem(), 'send')).toMatchObject({
      code: 'provider_error',
      http_status: 503,
      message: expect.stringContaining('upstream busy'),
    });
  });

  it('a provider timeout: timeout, no status', () => {
    const late = new ProviderError({ kind: 'timeout', message: 'no answer in 15 s' });
    expect(sendError(late.toProblem(), 'send')).toEqual({ code: 'timeout', message: expect.stringContaining('did not answer in time'), node_id: 'send' });
  });

  it('our refusal of an expanded button title names the field of the message', () => {
    let problem: unknown;
    try {
      checkProviderRules(
        {
          type: 'interactive',
          interactive: { type: 'button', body: { text: 'Pick' }, action: { buttons: [{ type: 'reply', reply: { id: 'a', title: 'x'.repeat(30) } }] } },
        },
        (path) => `message${path.replaceAll('/', '.')}`,
      );
    } catch (error) {
      problem = error;
    }
    expect(problem).toBeInstanceOf(HttpProblem);
    expect(sendError(problem, 'choose')).toEqual({
      code: 'send_refused',
      message: 'A button title is longer than 20 characters (30). (message.interactive.action.buttons.0.reply.title)',
      node_id: 'choose',
    });
    expect((problem as HttpProblem).problem.errors).toEqual([
      { pointer: 'message.interactive.action.buttons.0.reply.title', detail: 'A button title is longer than 20 characters (30).' },
    ]);
  });
});
