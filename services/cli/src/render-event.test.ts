import { describe, expect, it } from 'vitest';
import { renderEvent, renderPendingActions, summariseArguments } from './render-event.js';
import { message, statusChange, terminalAction, terminalResult, testEvent } from './test-support/events.js';

const ESC = '\u001b[';

describe('renderEvent', () => {
  it('shows user and agent messages with their speaker, continuation lines indented', () => {
    expect(renderEvent(message(1, 'fix the test', 'user'))).toEqual(['user: fix the test']);
    expect(renderEvent(message(2, 'Done.\nAll green.'))).toEqual(['agent: Done.', '       All green.']);
  });

  it('shows what a skill or a hook added to the user’s turn, and which skills it activated', () => {
    const activation = testEvent(
      'message',
      3,
      {
        role: 'user',
        content: [],
        extended_content: [{ type: 'text', text: 'SKILL TEXT' }],
        activated_skills: ['release'],
      },
      'environment',
    );
    expect(renderEvent(activation)).toEqual(['environment: [skills activated: release]', '             SKILL TEXT']);
  });

  it('shortens a long user message but never the agent’s answer', () => {
    const long = Array.from({ length: 30 }, (_, index) => `line ${index}`).join('\n');
    const user = renderEvent(message(1, long, 'user'));
    expect(user).toHaveLength(13);
    expect(user.at(-1)).toContain('18 more lines');
    expect(renderEvent(message(2, long))).toHaveLength(30);
  });

  it('shows a terminal call as ▶ terminal: <command>, with the thought before it', () => {
    expect(renderEvent(terminalAction(3, 'npm test'))).toEqual(['▶ terminal: npm test']);
    expect(renderEvent(terminalAction(3, 'ls -la', 'Let me look.'))).toEqual([
      'agent: Let me look.',
      '▶ terminal: ls -la',
    ]);
    expect(renderEvent(terminalAction(3, 'ls -la', 'Let me look.'), { omitText: true })).toEqual([
      '▶ terminal: ls -la',
    ]);
  });

  it('summarises a multi-line command by its first line', () => {
    expect(renderEvent(terminalAction(3, "cat <<'EOF' > a.txt\nhello\nEOF"))).toEqual([
      "▶ terminal: cat <<'EOF' > a.txt …",
    ]);
  });

  it('summarises other tools by their main arguments, or as key=value', () => {
    const editor = testEvent('action', 4, {
      tool_call_id: 'c4',
      tool_name: 'file_editor',
      arguments: '{}',
      input: { command: 'create', path: '/workspace/a.txt', file_text: 'x'.repeat(500), security_risk: 'low' },
      thought: [],
      response_id: 'r4',
      security_risk: 'high',
    });
    expect(renderEvent(editor)).toEqual(['▶ file_editor: create /workspace/a.txt [high risk]']);
    const mcp = testEvent('action', 5, {
      tool_call_id: 'c5',
      tool_name: 'fetch_url',
      arguments: '{}',
      input: { url: 'https://example.com', max_bytes: 1000, security_risk: 'low' },
      thought: [],
      response_id: 'r5',
      security_risk: 'low',
    });
    expect(summariseArguments(mcp)).toBe('url="https://example.com", max_bytes=1000');
    const broken = testEvent('action', 6, {
      tool_call_id: 'c6',
      tool_name: 'nope',
      arguments: '{"a":\n 1',
      input: null,
      thought: [],
      response_id: 'r6',
      security_risk: 'unknown',
    });
    expect(renderEvent(broken)).toEqual(['▶ nope: {"a": 1']);
  });

  it('shows the finish message whole', () => {
    const finish = testEvent('action', 7, {
      tool_call_id: 'c7',
      tool_name: 'finish',
      arguments: '{}',
      input: { message: 'All done.\nTwo files changed.' },
      thought: [],
      response_id: 'r7',
      security_risk: 'low',
    });
    expect(renderEvent(finish)).toEqual(['▶ finish: All done.', '  Two files changed.']);
  });

  it('shows a tool result with its exit code and only its first lines', () => {
    const output = Array.from({ length: 10 }, (_, index) => `out ${index}`).join('\n');
    expect(renderEvent(terminalResult(4, 3, output, 0))).toEqual([
      '  ✓ terminal · exit 0',
      '    │ out 0',
      '    │ out 1',
      '    │ out 2',
      '    │ out 3',
      '    │ … 6 more lines',
    ]);
    expect(renderEvent(terminalResult(4, 3, '', 0))).toEqual(['  ✓ terminal · exit 0']);
    expect(renderEvent(terminalResult(4, 3, 'boom', 2), { resultLines: 1 })).toEqual([
      '  ✗ terminal · exit 2',
      '    │ boom',
    ]);
  });

  it('paints errors red only when colour is on', () => {
    const error = testEvent('agent_error', 5, {
      tool_call_id: 'c3',
      tool_name: 'terminal',
      action_id: 'ev-3',
      error: 'interrupted',
    });
    expect(renderEvent(error)).toEqual(['  ✗ terminal failed: interrupted']);
    const [line] = renderEvent(error, { color: true });
    expect(line).toBe(`${ESC}31m  ✗ terminal failed: interrupted${ESC}39m`);
    expect(renderEvent(terminalResult(4, 3, 'boom', 1), { color: true })[0]).toContain(`${ESC}31m`);
    const failure = testEvent(
      'conversation_error',
      9,
      { code: 'max_iterations', detail: 'stopped after 50 steps' },
      'system',
    );
    expect(renderEvent(failure)).toEqual(['✗ max_iterations: stopped after 50 steps']);
    expect(renderEvent(failure, { color: true })[0]).toContain(`${ESC}31m`);
    expect(renderEvent(message(1, 'hi'), { color: false }).join('')).not.toContain(ESC);
  });

  it('shows status changes, pauses, interrupts, approvals and rejections', () => {
    expect(renderEvent(statusChange(8, 'finished'))).toEqual(['● finished']);
    expect(renderEvent(statusChange(8, 'waiting_for_confirmation', 'high risk'))).toEqual([
      '● waiting for confirmation (high risk)',
    ]);
    expect(renderEvent(testEvent('state_change', 9, { title: 'Fix CI', tags: ['ci'] }, 'user'))).toEqual([
      '● title: Fix CI',
      '● tags: ci',
    ]);
    expect(renderEvent(testEvent('pause', 10, { reason: 'lunch' }, 'user'))).toEqual(['‖ pause requested (lunch)']);
    expect(renderEvent(testEvent('interrupt', 10, {}, 'user'))).toEqual(['‖ interrupt']);
    expect(renderEvent(testEvent('approval', 11, { action_ids: ['ev-3', 'ev-4'] }, 'user'))).toEqual([
      '✓ approved 2 actions',
    ]);
    expect(
      renderEvent(
        testEvent(
          'user_rejection',
          12,
          { action_id: 'ev-3', tool_call_id: 'c3', tool_name: 'terminal', reason: 'no', rejection_source: 'user' },
          'user',
        ),
      ),
    ).toEqual(['  ✗ rejected terminal: no']);
  });

  it('shows that a secret was set or removed, by name', () => {
    expect(renderEvent(testEvent('secret_changed', 13, { name: 'GITHUB_TOKEN', action: 'set' }, 'user'))).toEqual([
      '· secret GITHUB_TOKEN set',
    ]);
    expect(
      renderEvent(testEvent('secret_changed', 14, { name: 'GITHUB_TOKEN', action: 'removed' }, 'user'), { seq: true }),
    ).toEqual(['#14 · secret GITHUB_TOKEN removed']);
  });

  it('hides bookkeeping events unless verbose', () => {
    const usage = testEvent('llm_usage', 6, {
      model: 'brain',
      purpose: 'step',
      prompt_tokens: 100,
      completion_tokens: 20,
      cache_read_tokens: 0,
      cache_write_tokens: 0,
      reasoning_tokens: 0,
      latency_ms: 12.4,
      cost_usd: 0.0012,
    });
    const started = testEvent('execution_started', 7, { action_ids: ['ev-3'], runner: 'tool-runner-1' }, 'system');
    expect(renderEvent(usage)).toEqual([]);
    expect(renderEvent(started)).toEqual([]);
    expect(renderEvent(usage, { verbose: true })).toEqual(['· brain (step): 100 in, 20 out, 12 ms, $0.0012']);
    // a call its fallback made says which
    const byFallback = {
      ...usage,
      v: 5,
      fallback: { index: 0, provider: 'openai-chat', model: 'spare', profile: 'backup' },
    } as typeof usage;
    expect(renderEvent(byFallback, { verbose: true })).toEqual([
      '· brain (step, by fallback backup): 100 in, 20 out, 12 ms, $0.0012',
    ]);
    expect(renderEvent(started, { verbose: true })).toEqual(['· running 1 action on tool-runner-1']);
  });

  it('prefixes the seq when asked', () => {
    expect(renderEvent(statusChange(42, 'running'), { seq: true })).toEqual(['#42 ● running']);
  });

  it('omits an agent message already streamed, but never a user message', () => {
    expect(renderEvent(message(2, 'streamed'), { omitText: true })).toEqual([]);
    expect(renderEvent(message(2, 'typed', 'user'), { omitText: true })).toEqual(['user: typed']);
  });
});

describe('renderPendingActions', () => {
  it('lists the actions awaiting confirmation and how to answer', () => {
    expect(renderPendingActions('c1', [terminalAction(3, 'rm -rf build')])).toEqual([
      '? 1 action awaiting confirmation:',
      '  ▶ terminal: rm -rf build [low risk]',
      '  approve: flotilla approve c1',
      '  reject:  flotilla reject c1 --reason "…"',
    ]);
  });
});
