import type { Event } from '@flotilla/events';
import { ScriptedLanguageModel } from '@flotilla/llm';
import { describe, expect, it } from 'vitest';
import { nextWork, stepNeverDueAfter } from './next-work.js';
import { call, conversationFixture } from './test-support/conversation-fixture.js';

describe('stepNeverDueAfter', () => {
  it('names only commits of actions and execution starts, never an unknown or empty list', () => {
    expect(stepNeverDueAfter(['llm_usage', 'action'])).toBe(true);
    expect(stepNeverDueAfter(['execution_started'])).toBe(true);
    expect(stepNeverDueAfter(['system_prompt', 'llm_usage', 'action'])).toBe(true);
    expect(stepNeverDueAfter(['llm_usage', 'action', 'agent_error'])).toBe(false);
    expect(stepNeverDueAfter(['llm_usage', 'action', 'state_change'])).toBe(false);
    expect(stepNeverDueAfter(['llm_usage'])).toBe(false);
    expect(stepNeverDueAfter(['observation'])).toBe(false);
    expect(stepNeverDueAfter([])).toBe(false);
  });

  it('holds at every commit of real runs: after a commit it names, nextWork is never a step', async () => {
    await using fixture = await conversationFixture();
    const runs = [
      // valid, parallel, unknown-tool and malformed calls, then finish
      {
        agent: {},
        replies: [
          { text: 'Thinking first.', toolCalls: [call('think', { thought: 'plan' })] },
          { toolCalls: [call('think', { thought: 'a' }), call('think', { thought: 'b' })] },
          { toolCalls: [call('no_such_tool', { x: 1 })] },
          { toolCalls: [call('think', '{not json')] },
          { toolCalls: [call('think', { thought: 'mixed' }), call('no_such_tool', {})] },
          { toolCalls: [call('finish', { message: 'done' })] },
        ],
      },
      // confirmation of every action: the run stops waiting, then is approved
      { agent: { confirmation: { mode: 'always' as const } }, replies: [{ toolCalls: [call('think', { thought: 'risky?' })] }, { toolCalls: [call('finish', { message: 'ok' })] }] },
    ];
    let named = 0;
    let checked = 0;
    for (const run of runs) {
      const llm = new ScriptedLanguageModel({ replies: run.replies });
      const conversation = fixture.conversation(llm, { tools: ['think', 'finish'], ...run.agent });
      await conversation.sendMessage('go', { run: true });
      // run() approves what waits for confirmation and resumes, until the conversation rests
      for (let turn = 0; turn < 10 && (await conversation.run()) === 'waiting_for_confirmation'; turn += 1);
      const events: Event[] = [];
      for await (const commit of fixture.log.read(conversation.ref)) {
        events.push(...commit.events);
        checked += 1;
        if (!stepNeverDueAfter([...new Set(commit.events.map((event) => event.type))])) continue;
        named += 1;
        expect(nextWork(events).kind, `after commit ${commit.streamSeq} (${commit.events.map((event) => event.type).join(',')})`).not.toBe('step');
      }
    }
    expect(checked).toBeGreaterThan(20);
    expect(named).toBeGreaterThanOrEqual(8);
  });
});
