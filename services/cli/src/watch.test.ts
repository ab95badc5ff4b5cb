import { FlotillaApiError } from '@flotilla/client';
import { describe, expect, it } from 'vitest';
import { tailConversation } from './tail.js';
import { Terminal } from './terminal.js';
import { message, statusChange, terminalAction, terminalResult, testEvent } from './test-support/events.js';
import { Captured, eventFrame, FakeStream } from './test-support/fake-stream.js';
import { watchConversation, type WatchOptions } from './watch.js';

const plain: WatchOptions = { afterSeq: 0, follow: false, verbose: false, color: false, spinner: false };
const sync = (lastSeq: number, status: 'running' | 'finished' | 'idle' | 'waiting_for_confirmation', afterSeq = 0) =>
  ({ type: 'sync', conversation: 'c1', after_seq: afterSeq, last_seq: lastSeq, status }) as const;

describe('watchConversation', () => {
  it('replays, streams the agent’s text once, and returns when the conversation finishes', async () => {
    const stream = new FakeStream([
      sync(2, 'running'),
      eventFrame(message(1, 'TASK go', 'user')),
      eventFrame(statusChange(2, 'running')),
      { type: 'live', last_seq: 2 },
      eventFrame(terminalAction(3, 'npm test')),
      eventFrame(terminalResult(4, 3, 'ok', 0)),
      { type: 'delta', kind: 'text', text: 'All ' },
      { type: 'delta', kind: 'reasoning', text: 'hmm' },
      { type: 'delta', kind: 'text', text: 'green' },
      eventFrame(message(5, 'All green.')),
      eventFrame(statusChange(6, 'finished')),
      eventFrame(message(7, 'after the end')),
    ]);
    const out = new Captured();
    const result = await watchConversation(stream.client, 'c1', new Terminal(out), plain);
    expect(result).toEqual({ status: 'finished', lastSeq: 6, interrupted: false });
    expect(out.lines).toEqual([
      'user: TASK go',
      '● running',
      '▶ terminal: npm test',
      '  ✓ terminal · exit 0',
      '    │ ok',
      'agent: All green.',
      '● finished',
    ]);
    expect(out.text).not.toContain('\u001b');
    expect(stream.closed).toBe(true);
    expect(stream.options?.afterSeq).toBe(0);
  });

  it('keeps the streamed line open across the step’s bookkeeping events, showing them after it when verbose', async () => {
    const usage = testEvent(
      'llm_usage',
      2,
      {
        model: 'm',
        purpose: 'step',
        prompt_tokens: 1,
        completion_tokens: 2,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        reasoning_tokens: 0,
        latency_ms: 5,
        cost_usd: 0,
      },
      'system',
    );
    const steps = [
      sync(0, 'running'),
      { type: 'delta', kind: 'text', text: 'Let me ' },
      { type: 'delta', kind: 'text', text: 'look.' },
      eventFrame(usage),
      eventFrame(terminalAction(3, 'ls', 'Let me look.')),
      eventFrame(statusChange(4, 'finished')),
    ] as const;
    const quiet = new Captured();
    await watchConversation(new FakeStream(steps).client, 'c1', new Terminal(quiet), plain);
    expect(quiet.lines).toEqual(['agent: Let me look.', '▶ terminal: ls', '● finished']);
    const verbose = new Captured();
    await watchConversation(new FakeStream(steps).client, 'c1', new Terminal(verbose), { ...plain, verbose: true });
    expect(verbose.lines).toEqual([
      'agent: Let me look.',
      '▶ terminal: ls',
      '· m (step): 1 in, 2 out, 5 ms, $0.0000',
      '● finished',
    ]);
  });

  it('prints a streamed text again in full when the event does not continue it', async () => {
    const stream = new FakeStream([
      sync(0, 'running'),
      { type: 'delta', kind: 'text', text: 'Something else' },
      eventFrame(message(1, 'The answer.')),
      eventFrame(statusChange(2, 'finished')),
    ]);
    const out = new Captured();
    await watchConversation(stream.client, 'c1', new Terminal(out), plain);
    expect(out.lines).toEqual(['agent: Something else', 'agent: The answer.', '● finished']);
  });

  it('returns at once for a conversation already at rest, and does not stop at resting points in the replay', async () => {
    const finished = new FakeStream([
      sync(2, 'finished'),
      eventFrame(message(1, 'hi', 'user')),
      eventFrame(statusChange(2, 'finished')),
      { type: 'live', last_seq: 2 },
    ]);
    const out = new Captured();
    expect((await watchConversation(finished.client, 'c1', new Terminal(out), plain)).status).toBe('finished');
    expect(out.lines).toEqual(['user: hi', '● finished']);

    const resumed = new FakeStream([
      sync(3, 'running'),
      eventFrame(statusChange(1, 'finished')),
      eventFrame(message(2, 'more', 'user')),
      eventFrame(statusChange(3, 'running')),
      { type: 'live', last_seq: 3 },
      eventFrame(statusChange(4, 'paused')),
    ]);
    const again = new Captured();
    expect(await watchConversation(resumed.client, 'c1', new Terminal(again), plain)).toEqual({
      status: 'paused',
      lastSeq: 4,
      interrupted: false,
    });
    expect(again.lines.at(-1)).toBe('● paused');
  });

  it('starts after --after-seq, taking the status from the sync frame', async () => {
    const stream = new FakeStream([sync(5, 'idle', 5)]);
    const out = new Captured();
    expect(await watchConversation(stream.client, 'c1', new Terminal(out), { ...plain, afterSeq: 5 })).toEqual({
      status: 'idle',
      lastSeq: 5,
      interrupted: false,
    });
    expect(stream.options?.afterSeq).toBe(5);
    expect(out.text).toBe('');
  });

  it('lists the pending actions and how to answer them at waiting_for_confirmation', async () => {
    const stream = new FakeStream([
      sync(0, 'running'),
      eventFrame(terminalAction(1, 'ls')),
      eventFrame(terminalResult(2, 1, '', 0)),
      eventFrame(terminalAction(3, 'rm -rf /tmp/x')),
      eventFrame(statusChange(4, 'waiting_for_confirmation')),
    ]);
    const out = new Captured();
    expect((await watchConversation(stream.client, 'c1', new Terminal(out), plain)).status).toBe(
      'waiting_for_confirmation',
    );
    expect(out.lines.slice(-5)).toEqual([
      '● waiting for confirmation',
      '? 1 action awaiting confirmation:',
      '  ▶ terminal: rm -rf /tmp/x [low risk]',
      '  approve: flotilla approve c1',
      '  reject:  flotilla reject c1 --reason "…"',
    ]);
  });

  it('finds pending actions in the log when the watch began after them', async () => {
    const stream = new FakeStream([sync(4, 'waiting_for_confirmation', 4)], [terminalAction(3, 'rm -rf /tmp/x')]);
    const out = new Captured();
    await watchConversation(stream.client, 'c1', new Terminal(out), { ...plain, afterSeq: 4 });
    expect(out.lines[1]).toBe('  ▶ terminal: rm -rf /tmp/x [low risk]');
  });

  it('keeps following with --follow until interrupted', async () => {
    const stream = new FakeStream([
      sync(0, 'running'),
      eventFrame(statusChange(1, 'finished')),
      eventFrame(message(2, 'again', 'user')),
    ]);
    const out = new Captured();
    const abort = new AbortController();
    const watching = watchConversation(stream.client, 'c1', new Terminal(out), {
      ...plain,
      follow: true,
      signal: abort.signal,
    });
    await expect.poll(() => out.lines.length).toBe(2);
    abort.abort();
    expect(await watching).toEqual({ status: 'finished', lastSeq: 2, interrupted: true });
    expect(stream.closed).toBe(true);
  });

  it('fails with the gateway’s reason when the stream closes for good', async () => {
    const stream = new FakeStream([{ type: 'close', code: 4004, reason: 'no such conversation' }]);
    const failure = watchConversation(stream.client, 'c1', new Terminal(new Captured()), plain);
    await expect(failure).rejects.toBeInstanceOf(FlotillaApiError);
    await expect(failure).rejects.toMatchObject({ code: 'conversation_not_found' });
  });

  it('spins on a TTY while running and quiet, and erases the spinner before the next line', async () => {
    const stream = new FakeStream([
      sync(0, 'running'),
      eventFrame(statusChange(1, 'running')),
      { type: 'wait', ms: 700 },
      eventFrame(statusChange(2, 'finished')),
    ]);
    const out = new Captured(true);
    await watchConversation(stream.client, 'c1', new Terminal(out), { ...plain, spinner: true });
    expect(out.text).toMatch(/\r\u001b\[K[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] running…/);
    expect(out.text).toMatch(/\r\u001b\[K● finished\n$/);
  });
});

describe('tailConversation', () => {
  it('prints every event as one JSON line and stops at the end of the log', async () => {
    const events = [message(1, 'hi', 'user'), statusChange(2, 'running')];
    const stream = new FakeStream([
      sync(2, 'running'),
      ...events.map(eventFrame),
      { type: 'live', last_seq: 2 },
      eventFrame(statusChange(3, 'finished')),
    ]);
    const out = new Captured();
    expect(await tailConversation(stream.client, 'c1', new Terminal(out), { afterSeq: 0, follow: false })).toEqual({
      lastSeq: 2,
      interrupted: false,
    });
    expect(out.lines.map((line) => JSON.parse(line) as unknown)).toEqual(events);
  });

  it('stops at once when there is nothing after --after-seq', async () => {
    const stream = new FakeStream([sync(2, 'finished', 2)]);
    const out = new Captured();
    expect(await tailConversation(stream.client, 'c1', new Terminal(out), { afterSeq: 2, follow: false })).toEqual({
      lastSeq: 2,
      interrupted: false,
    });
    expect(out.text).toBe('');
  });
});
