import { draftEvent, type Event, type EventDraft } from '@flotilla/events';
import { LlmError, ScriptedLanguageModel, type ScriptedReply } from '@flotilla/llm';
import { defineTool, textResult, ToolRegistry } from '@flotilla/tools';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseAgentConfig, type AgentConfigInput } from './agent-config.js';
import { invalidRepliesInRow } from './invalid-replies.js';
import { step, type StepResult } from './step.js';
import { registryCatalog } from './tool-catalog.js';

const ref = { tenant: 'acme', conversation: 'hostile' };
const now = (): Date => new Date('2026-01-01T00:00:00Z');
const terminal = defineTool({
  name: 'terminal',
  description: 'Run a command',
  parameters: z.object({ command: z.string() }),
  annotations: { readOnly: false, destructive: false, idempotent: false, openWorld: false },
  resources: () => [],
  execute: async () => textResult('ok'),
});
const tools = registryCatalog(new ToolRegistry([terminal]));

/** A conversation driven by `step` alone: each step's drafts appended as events, valid actions answered at once. */
function conversation(agent: Partial<AgentConfigInput> = {}) {
  const config = parseAgentConfig({
    llm: { provider: 'openai-chat', model: 'scripted' },
    prompt: { includeDate: false },
    ...agent,
  });
  const events: Event[] = [];
  const append = (drafts: readonly EventDraft[]): void => {
    for (const draft of drafts) events.push({ ...draft, seq: events.length + 1 } as Event);
  };
  const user = (text: string): void =>
    append([
      draftEvent({ ...ref, source: 'user', now }, 'message', { role: 'user', content: [{ type: 'text', text }] }),
      draftEvent({ ...ref, source: 'user', now }, 'state_change', { status: 'running' }),
    ]);
  return {
    events,
    user,
    async next(reply: ScriptedReply, info: { nativeToolCalling?: boolean } = {}): Promise<StepResult> {
      const llm = new ScriptedLanguageModel({ replies: [reply], info });
      const result = await step({ agent: config, llm, tools, events, conversation: ref, now });
      append(result.drafts);
      for (const draft of result.drafts) {
        if (draft.type === 'action' && draft.input !== null) {
          append([
            draftEvent({ ...ref, source: 'environment', now }, 'observation', {
              action_id: draft.id,
              tool_call_id: draft.tool_call_id,
              tool_name: draft.tool_name,
              content: [{ type: 'text', text: 'ok' }],
              is_error: false,
            }),
          ]);
        }
      }
      return result;
    },
  };
}

const types = (result: StepResult): string[] => result.drafts.map((draft) => draft.type);
const stopError = (result: StepResult): EventDraft | undefined =>
  result.drafts.find((draft) => draft.type === 'conversation_error');
const toolCall = (id: string, name: string, args: string) => ({ toolCalls: [{ id, name, arguments: args }] });

describe('replies the step cannot act on', () => {
  it('answers each invalid call visibly and ends the run at the third reply in a row with only invalid calls', async () => {
    const run = conversation();
    run.user('do it');
    const first = await run.next(toolCall('c1', 'no_such_tool', '{}'));
    expect(types(first)).toEqual(['system_prompt', 'llm_usage', 'action', 'agent_error']);
    const second = await run.next(toolCall('c2', 'terminal', '{"command": '));
    expect(types(second)).toEqual(['llm_usage', 'action', 'agent_error']);
    const third = await run.next({
      toolCalls: [
        { id: 'c3', name: 'terminal', arguments: '{"cmd": "ls"}' },
        { id: 'c4', name: 'other', arguments: '[]' },
      ],
    });
    expect(third.outcome).toBe('error');
    expect(types(third)).toEqual([
      'llm_usage',
      'action',
      'agent_error',
      'action',
      'agent_error',
      'conversation_error',
      'state_change',
    ]);
    expect(stopError(third)).toMatchObject({
      code: 'invalid_replies',
      detail: expect.stringMatching(
        /^The model's last 3 replies in a row could not be used \(the last: every tool call was invalid: Invalid arguments for tool "terminal"/,
      ),
    });
    expect(third.drafts.at(-1)).toMatchObject({ type: 'state_change', status: 'error' });
  });

  it('counts only replies in a row: a usable call or a user message starts the count again', async () => {
    const run = conversation();
    run.user('do it');
    await run.next(toolCall('c1', 'nope', '{}'));
    await run.next(toolCall('c2', 'nope', '{}'));
    expect(invalidRepliesInRow(run.events, 0, 3)).toBe(2);
    await run.next(toolCall('c3', 'terminal', '{"command": "ls"}'));
    expect(invalidRepliesInRow(run.events, 0, 3)).toBe(0);
    await run.next(toolCall('c4', 'nope', '{}'));
    run.user('again');
    expect(invalidRepliesInRow(run.events, 0, 3)).toBe(0);
    expect((await run.next(toolCall('c5', 'nope', '{}'))).outcome).toBe('actions');
    expect((await run.next(toolCall('c6', 'nope', '{}'))).outcome).toBe('actions');
    expect((await run.next(toolCall('c7', 'nope', '{}'))).outcome).toBe('error');
  });

  it('corrects a tool call written as text (kept as the assistant message, never run, never the final answer), and ends the run when it goes on', async () => {
    const run = conversation();
    run.user('list the files');
    const first = await run.next({ text: '<function=terminal>\n<parameter=command>\nls\n</parameter>\n</function>' });
    expect(first.outcome).toBe('continue');
    expect(types(first)).toEqual(['system_prompt', 'llm_usage', 'message', 'agent_error']);
    expect(first.drafts[3]).toMatchObject({
      source: 'environment',
      error: expect.stringContaining('wrote a call to the tool "terminal" as text'),
    });
    expect(first.drafts[3]).not.toHaveProperty('tool_call_id');
    expect(first.drafts.some((draft) => draft.type === 'action' || draft.type === 'state_change')).toBe(false);
    await run.next({ text: '{"tool": "terminal", "arguments": {"command": "ls"}}' });
    const third = await run.next({
      text: '<tool_call>{"name": "terminal", "arguments": {"command": "ls"}}</tool_call>',
    });
    expect(stopError(third)).toMatchObject({
      code: 'invalid_replies',
      detail: expect.stringContaining('it wrote a call to "terminal" as text instead of calling the tool'),
    });
  });

  it('takes text from a prompt-tools model, and prose or JSON that is no call, as the final answer', async () => {
    const promptTools = conversation();
    promptTools.user('list the files');
    expect(
      (await promptTools.next({ text: '<function=terminal>ls</function>' }, { nativeToolCalling: false })).outcome,
    ).toBe('finished');
    const answer = conversation();
    answer.user('give me a JSON person');
    expect((await answer.next({ text: '{"name": "Ada", "age": 36}' })).outcome).toBe('finished');
  });

  it('counts replies the content filter blocked: nudged twice, then the run ends', async () => {
    const run = conversation();
    run.user('do it');
    const blocked = (): LlmError => new LlmError('content_filter', 'blocked by the content filter');
    expect(types(await run.next(blocked()))).toEqual(['system_prompt', 'message']);
    expect((await run.next(blocked())).outcome).toBe('continue');
    const third = await run.next(blocked());
    expect(stopError(third)).toMatchObject({
      code: 'invalid_replies',
      detail: expect.stringContaining("the provider's content filter blocked the reply"),
    });
  });

  it('counts empty replies too, and follows limits.maxInvalidRepliesInRow', async () => {
    const run = conversation({ limits: { maxInvalidRepliesInRow: 2 } });
    run.user('do it');
    const first = await run.next({});
    expect(types(first)).toEqual(['system_prompt', 'llm_usage', 'message']);
    const second = await run.next({ text: '  ' });
    expect(stopError(second)).toMatchObject({
      code: 'invalid_replies',
      detail: expect.stringContaining('the last: the reply was empty'),
    });
    expect(() =>
      parseAgentConfig({ llm: { provider: 'openai-chat', model: 'm' }, limits: { maxInvalidRepliesInRow: 13 } }),
    ).toThrow(/maxInvalidRepliesInRow/);
    expect(parseAgentConfig({ llm: { provider: 'openai-chat', model: 'm' } }).limits.maxInvalidRepliesInRow).toBe(3);
  });
});
