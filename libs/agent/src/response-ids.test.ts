import { SUMMARY_SYSTEM_PROMPT } from '@flotilla/condenser';
import type { ActionEvent, Event } from '@flotilla/events';
import { ScriptedLanguageModel, type AssistantMessage, type GenerateRequest } from '@flotilla/llm';
import { buildView, viewBlocks } from '@flotilla/view';
import { describe, expect, it } from 'vitest';
import { checkpointFolds, parseConversationCheckpoint, resumeFolds } from './conversation-checkpoint.js';
import { freshResponseId } from './step.js';
import { call, conversationFixture } from './test-support/conversation-fixture.js';

const isSummaryRequest = (request: GenerateRequest): boolean =>
  request.messages[0]?.role === 'system' &&
  request.messages[0].content.some((block) => block.text === SUMMARY_SYSTEM_PROMPT);

const actionsOf = (events: readonly Event[]): ActionEvent[] =>
  events.filter((event): event is ActionEvent => event.type === 'action');

/** The view a step reads when it resumes from a checkpoint taken after each event, then folds the rest: it must be the whole log's view. */
function expectCheckpointsAgree(events: readonly Event[]): void {
  const whole = buildView(events);
  for (let at = 1; at < events.length; at += 1) {
    const folds = resumeFolds(undefined);
    folds.view.append(events.slice(0, at));
    folds.run.append(events.slice(0, at));
    folds.progress.append(events.slice(0, at));
    const stored = parseConversationCheckpoint(JSON.parse(JSON.stringify(checkpointFolds(folds))));
    if (!stored.ok) throw new Error(stored.reason);
    const resumed = resumeFolds(stored.checkpoint).view.append(events.slice(at));
    expect(resumed.view(), `checkpoint after event ${at}`).toEqual(whole);
  }
}

describe('response ids a model server repeats', () => {
  it('gives each step its own response: the calls of different steps are never one assistant message, and the provider id stays in llm_usage', async () => {
    await using fixture = await conversationFixture();
    const llm = new ScriptedLanguageModel({
      replies: [
        { toolCalls: [call('think', { thought: 'one' })], responseId: 'chatcmpl-same' },
        {
          toolCalls: [call('think', { thought: 'two a' }), call('think', { thought: 'two b' })],
          responseId: 'chatcmpl-same',
        },
        { toolCalls: [call('think', { thought: 'three' })], responseId: 'chatcmpl-same' },
        { text: 'Done thinking.', responseId: 'chatcmpl-same' },
      ],
    });
    const conversation = fixture.conversation(llm, { tools: ['think', 'finish'] });
    await conversation.sendMessage('Think three times.', { run: true });
    expect(await conversation.run()).toBe('finished');
    const events = await conversation.events();

    const actions = actionsOf(events);
    expect(actions.map((action) => action.response_id)).toEqual([
      'chatcmpl-same',
      'chatcmpl-same_2',
      'chatcmpl-same_2',
      'chatcmpl-same_3',
    ]);
    const answer = events.find((event) => event.type === 'message' && event.role === 'assistant');
    expect(answer).toMatchObject({ response_id: 'chatcmpl-same_4' });
    // what the provider answered is kept where the step's usage is recorded
    const usages = events.filter((event) => event.type === 'llm_usage');
    expect(usages.map((usage) => usage.response_id)).toEqual([
      'chatcmpl-same',
      'chatcmpl-same',
      'chatcmpl-same',
      'chatcmpl-same',
    ]);

    // three blocks in the view, and the last request shows three assistant messages of one, two and one calls, each answered
    const blocks = viewBlocks(buildView(events)).filter((block) => block.tool);
    expect(blocks.map((block) => block.end - block.start)).toEqual([2, 4, 2]);
    const last = llm.requests[3]!.messages;
    const assistants = last.filter((message): message is AssistantMessage => message.role === 'assistant');
    expect(
      assistants.map((message) => message.toolCalls.map((toolCall) => JSON.parse(toolCall.arguments) as unknown)),
    ).toEqual([[{ thought: 'one' }], [{ thought: 'two a' }, { thought: 'two b' }], [{ thought: 'three' }]]);
    expect(last.map((message) => message.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'tool',
      'assistant',
      'tool',
    ]);
    expectCheckpointsAgree(events);
  });

  it('with recycled ids and condensations, every step sees its last call, and a checkpoint reader sees what the whole log shows', async () => {
    await using fixture = await conversationFixture();
    let steps = 0;
    const llm = new ScriptedLanguageModel({
      replies: (request) => {
        if (isSummaryRequest(request)) return { text: 'Thought a lot.', responseId: 'chatcmpl-1' };
        steps += 1;
        // a server that counts its ids from 1 again every fourth reply (a restart, another server after a model switch)
        const responseId = `chatcmpl-${((steps - 1) % 4) + 1}`;
        if (steps > 14) return { toolCalls: [call('finish', { message: 'done' })], responseId };
        return { toolCalls: [call('think', { thought: `thought ${steps}` })], responseId };
      },
    });
    const conversation = fixture.conversation(llm, {
      tools: ['think', 'finish'],
      condenser: { maxEvents: 8, keepFirst: 2 },
      confirmation: { mode: 'always' },
    });
    await conversation.sendMessage('Think it through.', { run: true });
    let status = await conversation.run();
    for (let approvals = 0; status === 'waiting_for_confirmation' && approvals < 30; approvals += 1)
      status = await conversation.run();
    expect(status).toBe('finished');
    const events = await conversation.events();
    expect(events.filter((event) => event.type === 'condensation').length).toBeGreaterThanOrEqual(2);

    const actions = actionsOf(events);
    expect(new Set(actions.map((action) => action.response_id)).size).toBe(actions.length);
    // every assistant message of every request is one step's single call; a step's request holds
    // the call the step before it made, answered, unless a condensation came between them
    const stepRequests = llm.requests.filter((request) => !isSummaryRequest(request));
    const usages = events.filter((event) => event.type === 'llm_usage' && event.purpose === 'step');
    expect(stepRequests).toHaveLength(usages.length);
    let seen = 0;
    stepRequests.forEach((request, index) => {
      const calls = request.messages.flatMap((message) =>
        message.role === 'assistant' ? [message.toolCalls.map((toolCall) => toolCall.id)] : [],
      );
      expect(
        calls.every((ids) => ids.length === 1),
        `step ${index + 1}`,
      ).toBe(true);
      const previous = actions.findLast((action) => action.seq < usages[index]!.seq);
      if (previous === undefined) return;
      const condensed = events.some(
        (event) => event.type === 'condensation' && event.seq > previous.seq && event.seq < usages[index]!.seq,
      );
      if (condensed) return;
      seen += 1;
      expect(calls.flat(), `step ${index + 1}`).toContain(previous.tool_call_id);
      expect(
        request.messages.some((message) => message.role === 'tool' && message.toolCallId === previous.tool_call_id),
        `step ${index + 1}`,
      ).toBe(true);
    });
    expect(seen).toBeGreaterThanOrEqual(5);
    expectCheckpointsAgree(events);
  });

  it('keeps an id no earlier response carries, and finds a free one otherwise', () => {
    expect(freshResponseId('resp_1', new Set(['resp_0']))).toBe('resp_1');
    expect(freshResponseId('resp_1', new Set(['resp_1']))).toBe('resp_1_2');
    expect(freshResponseId('resp_1', new Set(['resp_1', 'resp_1_3']))).toBe('resp_1_3_');
  });
});
