import { describe, expect, it } from 'vitest';
import type { ActionEvent } from '@flotilla/events';
import { ChatRenderer, toChatMessages } from './chat-messages.js';
import { TestLog } from './testing/test-log.js';
import { buildView, ViewBuilder } from './view-builder.js';

const render = (log: TestLog) => toChatMessages(buildView(log.events));

describe('toChatMessages', () => {
  it('renders the system prompt as a cached static block and an uncached dynamic block', () => {
    const log = new TestLog();
    log.system('static part', 'today is Monday');
    expect(render(log)).toEqual([
      {
        role: 'system',
        content: [
          { text: 'static part', cache: true },
          { text: 'today is Monday', cache: false },
        ],
      },
    ]);
    const plain = new TestLog();
    plain.system('static part');
    expect(render(plain)[0]).toEqual({ role: 'system', content: [{ text: 'static part', cache: true }] });
  });

  it('merges a batch into one assistant message with thought and thinking, then results in call order', () => {
    const log = new TestLog();
    log.system();
    const [a, b] = log.batch({ size: 2, thinking: true, thought: 'checking both' }) as [ActionEvent, ActionEvent];
    log.observe(b, 'second');
    log.observe(a, 'first');
    const [, assistant, first, second] = render(log);
    expect(assistant).toEqual({
      role: 'assistant',
      content: [{ type: 'text', text: 'checking both' }],
      toolCalls: [a, b].map((action) => ({ id: action.tool_call_id, name: 'terminal', arguments: action.arguments })),
      reasoning: { thinkingBlocks: [{ type: 'thinking', thinking: 'hmm', signature: `sig-${a.response_id}` }] },
      responseId: a.response_id,
    });
    expect(first).toMatchObject({
      role: 'tool',
      toolCallId: a.tool_call_id,
      content: [{ type: 'text', text: 'first' }],
    });
    expect(second).toMatchObject({
      role: 'tool',
      toolCallId: b.tool_call_id,
      content: [{ type: 'text', text: 'second' }],
    });
  });

  it('renders errors, rejections and failed runs as tool results', () => {
    const log = new TestLog();
    const [bad, refused, failed] = log.batch({ size: 3, invalid: [0] }) as [ActionEvent, ActionEvent, ActionEvent];
    log.error(bad, 'unknown tool "terminl"');
    log.reject(refused, 'touches production', 'hook');
    log.observe(failed, 'exit 1', true);
    expect(render(log).slice(1)).toEqual([
      {
        role: 'tool',
        toolCallId: bad.tool_call_id,
        toolName: 'terminal',
        content: [{ type: 'text', text: 'unknown tool "terminl"' }],
        isError: true,
      },
      {
        role: 'tool',
        toolCallId: refused.tool_call_id,
        toolName: 'terminal',
        content: [{ type: 'text', text: 'A hook rejected this action; it was not run. Reason: touches production' }],
      },
      {
        role: 'tool',
        toolCallId: failed.tool_call_id,
        toolName: 'terminal',
        content: [{ type: 'text', text: 'exit 1' }],
        isError: true,
      },
    ]);
  });

  it('coalesces consecutive user turns: messages, summaries and free-standing errors', () => {
    const log = new TestLog();
    log.system();
    const forgotten = log.agent('old');
    log.user('one');
    log.condense([forgotten.id], 'the summary', 1);
    log.error(undefined, 'you sent an empty reply');
    log.user('two');
    log.agent('ok');
    expect(render(log).slice(1)).toEqual([
      {
        role: 'user',
        content: ['the summary', 'one', 'you sent an empty reply', 'two'].map((text) => ({ type: 'text', text })),
      },
      { role: 'assistant', content: [{ type: 'text', text: 'ok' }], toolCalls: [], responseId: expect.any(String) },
    ]);
  });

  it('maps images and fills an empty tool output', () => {
    const log = new TestLog();
    const user = log.user('look');
    const withImage = { ...user, content: [{ type: 'image' as const, data: 'AAAA', media_type: 'image/png' }] };
    const [call] = log.batch();
    const result = log.observe(call!);
    const empty = { ...result, content: [] };
    const messages = toChatMessages(buildView([withImage, call!, empty]));
    expect(messages[0]).toEqual({ role: 'user', content: [{ type: 'image', data: 'AAAA', mediaType: 'image/png' }] });
    expect(messages[2]).toMatchObject({ role: 'tool', content: [{ type: 'text', text: '(no output)' }] });
  });

  it('maps a stored image to one the model caller reads in, its bytes never in the view', () => {
    const log = new TestLog();
    const user = log.user('what is this?');
    const stored = {
      type: 'image' as const,
      sha256: 'a'.repeat(64),
      bytes: 2048,
      media_type: 'image/png',
      name: 'shot.png',
    };
    const messages = toChatMessages(buildView([{ ...user, v: 4, content: [...user.content, stored] }]));
    expect(messages[0]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'what is this?' },
        { type: 'image', mediaType: 'image/png', stored: { sha256: 'a'.repeat(64), bytes: 2048, name: 'shot.png' } },
      ],
    });
  });

  it('stays valid for a hand-made view with an orphan result and an unanswered call', () => {
    const log = new TestLog();
    const [answeredCall, unanswered] = log.batch({ size: 2 }) as [ActionEvent, ActionEvent];
    const [other] = log.batch();
    const result = log.observe(answeredCall);
    const orphan = log.observe(other!);
    const messages = toChatMessages([orphan, answeredCall, unanswered, result]);
    expect(messages).toHaveLength(2);
    expect(messages[0]).toMatchObject({ role: 'assistant', toolCalls: [{ id: answeredCall.tool_call_id }] });
    expect(messages[1]).toMatchObject({ role: 'tool', toolCallId: answeredCall.tool_call_id });
  });
});

describe('ChatRenderer', () => {
  it('keeps the messages of what did not change, renders the rest, and keeps a running measure', () => {
    const log = new TestLog();
    log.system();
    log.user('one');
    log.user('two');
    const [call] = log.batch();
    const builder = new ViewBuilder().append(log.events);
    const renderer = new ChatRenderer((message) => message.content.length);
    const first = renderer.render(builder.view().items);
    // the batch has no result yet: the call is left out, the two user turns are one message
    expect(first.messages.map((message) => message.role)).toEqual(['system', 'user']);
    expect(first.measured).toBe(1 + 2);

    const before = log.events.length;
    log.observe(call!);
    log.agent('done');
    const second = renderer.render(builder.append(log.events.slice(before)).view().items);
    expect(second.messages).toEqual(render(log));
    expect(second.messages.map((message) => message.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);
    // the system message and the merged user turn are the same objects as before
    expect(second.messages[0]).toBe(first.messages[0]);
    expect(second.messages[1]).toBe(first.messages[1]);
    expect(second.measured).toBe(second.messages.reduce((sum, message) => sum + message.content.length, 0));
    expect(renderer.render(builder.view().items).messages).toEqual(second.messages);
  });

  it('renders again from where a condensation changed the view', () => {
    const log = new TestLog();
    log.system();
    const old = log.agent('old');
    log.user('question');
    const builder = new ViewBuilder().append(log.events);
    const renderer = new ChatRenderer();
    expect(renderer.render(builder.view().items).messages).toHaveLength(3);
    const before = log.events.length;
    log.condense([old.id], 'the summary', 1);
    const after = renderer.render(builder.append(log.events.slice(before)).view().items);
    expect(after.messages).toEqual(render(log));
    expect(after.messages[1]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'the summary' },
        { type: 'text', text: 'question' },
      ],
    });
    expect(after.measured).toBeUndefined();
  });
});
