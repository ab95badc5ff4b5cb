import type { StreamDelta } from '@flotilla/llm';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DeltaCoalescer } from './delta-coalescer.js';

describe('DeltaCoalescer', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('merges consecutive deltas of one kind and publishes them after the interval', () => {
    const published: StreamDelta[] = [];
    const deltas = new DeltaCoalescer((delta) => published.push(delta), 30);
    deltas.push({ type: 'text', text: 'Hel' });
    deltas.push({ type: 'text', text: 'lo' });
    expect(published).toEqual([]);
    vi.advanceTimersByTime(29);
    expect(published).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(published).toEqual([{ type: 'text', text: 'Hello' }]);
    deltas.push({ type: 'text', text: '!' });
    deltas.flush();
    expect(published).toEqual([
      { type: 'text', text: 'Hello' },
      { type: 'text', text: '!' },
    ]);
    vi.advanceTimersByTime(100);
    expect(published).toHaveLength(2);
  });

  it('keeps kinds, tool calls and restarts apart, in order', () => {
    const published: StreamDelta[] = [];
    const deltas = new DeltaCoalescer((delta) => published.push(delta), 30);
    deltas.push({ type: 'reasoning', text: 'think' });
    deltas.push({ type: 'reasoning', text: 'ing' });
    deltas.push({ type: 'text', text: 'a' });
    deltas.push({ type: 'tool_call', index: 0, id: 'c1', name: 'terminal', argumentsDelta: '{"com' });
    deltas.push({ type: 'tool_call', index: 0, argumentsDelta: 'mand":"ls"}' });
    deltas.push({ type: 'tool_call', index: 1, id: 'c2', name: 'think', argumentsDelta: '' });
    deltas.push({ type: 'tool_call', index: 1, argumentsDelta: '{}' });
    deltas.push({ type: 'restart', attempt: 2 });
    deltas.push({ type: 'text', text: 'b' });
    deltas.flush();
    expect(published).toEqual([
      { type: 'reasoning', text: 'thinking' },
      { type: 'text', text: 'a' },
      { type: 'tool_call', index: 0, id: 'c1', name: 'terminal', argumentsDelta: '{"command":"ls"}' },
      { type: 'tool_call', index: 1, id: 'c2', name: 'think', argumentsDelta: '{}' },
      { type: 'restart', attempt: 2 },
      { type: 'text', text: 'b' },
    ]);
  });

  it('publishes each delta at once with an interval of 0', () => {
    const published: StreamDelta[] = [];
    const deltas = new DeltaCoalescer((delta) => published.push(delta), 0);
    deltas.push({ type: 'text', text: 'a' });
    deltas.push({ type: 'text', text: 'b' });
    expect(published).toEqual([
      { type: 'text', text: 'a' },
      { type: 'text', text: 'b' },
    ]);
  });
});
