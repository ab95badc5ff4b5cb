import { describe, expect, it } from 'vitest';
import { LlmError } from './core/errors.js';
import type { StreamDelta } from './core/language-model.js';
import { ScriptedLanguageModel } from './scripted-language-model.js';
import { firstTurn } from './testing/index.js';

describe('ScriptedLanguageModel', () => {
  it('replays scripted replies in order, records requests and emits deltas', async () => {
    const model = new ScriptedLanguageModel({
      replies: [
        {
          text: 'Reading it now',
          toolCalls: [{ id: 'c1', name: 'read_file', arguments: '{"path":"a"}' }],
          usage: { inputTokens: 10 },
        },
        new LlmError('rate_limit', 'slow down'),
      ],
    });
    const deltas: StreamDelta[] = [];
    const result = await model.generate({ messages: firstTurn }, { onDelta: (delta) => deltas.push(delta) });
    expect(result).toMatchObject({
      finishReason: 'tool_calls',
      responseId: 'scripted-1',
      usage: { inputTokens: 10, outputTokens: 0 },
    });
    expect(deltas.flatMap((delta) => (delta.type === 'text' ? [delta.text] : [])).join('')).toBe('Reading it now');
    expect(deltas.at(-1)).toEqual({ type: 'tool_call', index: 0, argumentsDelta: '{"path":"a"}' });
    await expect(model.generate({ messages: firstTurn })).rejects.toMatchObject({ code: 'rate_limit' });
    await expect(model.generate({ messages: firstTurn })).rejects.toThrow(/has 2 replies/);
    expect(model.requests).toHaveLength(3);
  });

  it('answers from a function of the request and honours abort during its latency', async () => {
    const model = new ScriptedLanguageModel({
      replies: (request, index) => ({ text: `${index}:${request.messages.length}` }),
      latencyMs: 5_000,
    });
    const started = performance.now();
    await expect(model.generate({ messages: firstTurn }, { signal: AbortSignal.timeout(30) })).rejects.toMatchObject({
      code: 'cancelled',
    });
    expect(performance.now() - started).toBeLessThan(1_000);
    const fast = new ScriptedLanguageModel({
      replies: (request, index) => ({ text: `${index}:${request.messages.length}` }),
    });
    expect((await fast.generate({ messages: firstTurn })).content).toEqual([{ type: 'text', text: '0:2' }]);
  });

  it('takes its latency from the request when given a function', async () => {
    const model = new ScriptedLanguageModel({
      replies: () => ({ text: 'ok' }),
      latencyMs: (request) => request.messages.length * 100,
    });
    const started = performance.now();
    await model.generate({ messages: firstTurn });
    expect(performance.now() - started).toBeGreaterThanOrEqual(190);
    await expect(model.generate({ messages: firstTurn }, { signal: AbortSignal.timeout(30) })).rejects.toMatchObject({
      code: 'cancelled',
    });
  });

  it('counts calls without keeping requests when told not to record', async () => {
    const model = new ScriptedLanguageModel({ replies: (_request, index) => ({ text: String(index) }), record: false });
    await model.generate({ messages: firstTurn });
    expect((await model.generate({ messages: firstTurn })).content).toEqual([{ type: 'text', text: '1' }]);
    expect(model.requests).toEqual([]);
  });
});
