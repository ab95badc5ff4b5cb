import { SUMMARY_SYSTEM_PROMPT } from '@flotilla/condenser';
import type { Event } from '@flotilla/events';
import { LlmError, ScriptedLanguageModel, type GenerateRequest } from '@flotilla/llm';
import { describe, expect, it } from 'vitest';
import { CONDENSATION_NO_PROGRESS, condensationRequestsInRow } from './condense-or-fail.js';
import { call, conversationFixture } from './test-support/conversation-fixture.js';

const isSummaryRequest = (request: GenerateRequest): boolean =>
  request.messages[0]?.role === 'system' &&
  request.messages[0].content.some((block) => block.text === SUMMARY_SYSTEM_PROMPT);

const after = (events: readonly Event[], seq: number): Event[] => events.filter((event) => event.seq > seq);

describe('condensations that make no room', () => {
  it('a model that reports a context overflow whatever it is sent: one condensation, a hard reset, then the run ends in error saying why', async () => {
    await using fixture = await conversationFixture();
    let steps = 0;
    const llm = new ScriptedLanguageModel({
      replies: (request) => {
        if (isSummaryRequest(request)) return { text: 'Thought a lot.' };
        steps += 1;
        if (steps <= 4) return { toolCalls: [call('think', { thought: `thought ${steps}` })] };
        return new LlmError('context_window_exceeded', 'This model maximum context length is 8 tokens.');
      },
    });
    const conversation = fixture.conversation(llm, {
      tools: ['think', 'finish'],
      condenser: { maxEvents: 64, keepFirst: 2 },
    });
    await conversation.sendMessage('Think it through.', { run: true });
    expect(await conversation.run()).toBe('error');
    const events = await conversation.events();
    const lastStep = events.findLast((event) => event.type === 'llm_usage' && event.purpose === 'step')!;
    expect(after(events, lastStep.seq).map((event) => event.type)).toEqual([
      // the last call and its observation, then three overflows: a condensation, a hard reset, the end
      'action',
      'execution_started',
      'observation',
      'condensation_request',
      'condensation',
      'llm_usage',
      'condensation_request',
      'condensation',
      'llm_usage',
      'condensation_request',
      'conversation_error',
      'state_change',
    ]);
    const [first, reset] = events.filter((event) => event.type === 'condensation');
    // the hard reset forgets everything after the kept head (the task and the first call), the earlier summary with it
    expect(reset!.forgotten_event_ids).toContain(first!.id);
    expect(events.at(-2)).toMatchObject({
      type: 'conversation_error',
      code: CONDENSATION_NO_PROGRESS,
      detail: expect.stringContaining('the model reported a context window overflow'),
    });
    expect(events.at(-1)).toMatchObject({ type: 'state_change', status: 'error', reason: 'condensation made no room' });
    expect(llm.requests.filter((request) => !isSummaryRequest(request))).toHaveLength(7);
  });

  it('counts the step\u2019s requests since the model last answered a step or the user last acted', async () => {
    await using fixture = await conversationFixture();
    const llm = new ScriptedLanguageModel({
      replies: (request) =>
        isSummaryRequest(request) ? { text: 'Summary.' } : new LlmError('context_window_exceeded', 'too long'),
    });
    const conversation = fixture.conversation(llm, { tools: ['think', 'finish'] });
    await conversation.sendMessage('Go.', { run: true });
    expect(await conversation.run()).toBe('error');
    const events = await conversation.events();
    expect(condensationRequestsInRow(events)).toBe(3);
    // a new message from the user starts the count again
    await conversation.sendMessage('Try again.', { run: true });
    const more = await conversation.events();
    expect(condensationRequestsInRow(more)).toBe(0);
  });
});
