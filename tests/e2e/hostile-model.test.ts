import type { Event } from '@flotilla/events';
import type { ConversationRef } from '@flotilla/log';
import { describe, expect, it } from 'vitest';
import { basicViolations } from '../support/log-checks.js';
import { startTestSystem, type RunningTestSystem } from '../support/system.js';
import { expectAudited } from '../support/audited.js';

/**
 * Issue 17, hostile model replies, each through the services: the hostile conversation comes to
 * rest with a visible reason within a bound, no service process exits, and a calm conversation on
 * the same services finishes its steps as usual.
 */
const REST = ['finished', 'error', 'stuck'] as const;
const CALM_STEPS = 3;

const ofType = <T extends Event['type']>(events: readonly Event[], type: T): Extract<Event, { type: T }>[] =>
  events.filter((event): event is Extract<Event, { type: T }> => event.type === type);
const modelSteps = (events: readonly Event[]): number =>
  ofType(events, 'llm_usage').filter((event) => event.purpose === 'step').length;

/** Waits for every conversation to come to rest, printing their logs when one does not. */
async function settle(system: RunningTestSystem, refs: readonly ConversationRef[], timeoutMs: number): Promise<void> {
  await system.waitForStatus(refs, REST, timeoutMs).catch(async (error: unknown) => {
    for (const ref of refs)
      console.log(
        ref.conversation,
        JSON.stringify(
          (await system.events(ref)).map((event) => [
            event.seq,
            event.type,
            'code' in event ? event.code : '',
            'status' in event ? event.status : '',
          ]),
        ),
      );
    throw error;
  });
}

/** The calm neighbour finished its steps as an ordinary conversation does; no process exited; both logs audit clean. */
async function expectUnharmed(
  system: RunningTestSystem,
  calm: ConversationRef,
  hostile: readonly ConversationRef[],
): Promise<void> {
  expect(await system.status(calm)).toBe('finished');
  const events = await system.events(calm);
  expect(ofType(events, 'observation')).toHaveLength(CALM_STEPS);
  expect(ofType(events, 'conversation_error')).toEqual([]);
  expect(modelSteps(events)).toBe(CALM_STEPS + 1);
  expect((await system.readEffects()).filter((line) => line.startsWith(`${calm.conversation} `))).toHaveLength(
    CALM_STEPS,
  );
  for (const child of system.processes) {
    expect(child.unexpectedExits, child.name).toEqual([]);
    expect(child.restarts, child.name).toBe(0);
  }
  for (const ref of [calm, ...hostile]) {
    expect(basicViolations(await system.events(ref))).toEqual([]);
    await expectAudited(system.log, ref);
  }
}

describe('hostile model replies', () => {
  it('a model whose every tool call is invalid gets each one answered, and its run ends after three such replies in a row', async () => {
    await using system = await startTestSystem();
    const hostile = { tenant: 'acme', conversation: 'invalid-calls' };
    const calm = { tenant: 'acme', conversation: 'calm-beside-invalid' };
    await system.start(hostile, { id: 'invalid-calls', steps: 1, hostile: 'invalid_tool_calls' });
    await system.start(calm, { id: calm.conversation, steps: CALM_STEPS });
    await settle(system, [hostile, calm], 30_000);

    expect(await system.status(hostile)).toBe('error');
    const events = await system.events(hostile);
    // an unknown tool, arguments that are not JSON, arguments failing the schema: each answered for the model to read
    const actions = ofType(events, 'action');
    expect(actions.map((action) => [action.tool_name, action.input])).toEqual([
      ['no_such_tool', null],
      ['terminal', null],
      ['terminal', null],
    ]);
    expect(ofType(events, 'agent_error').map((error) => [error.tool_call_id, error.error])).toEqual([
      [actions[0]!.tool_call_id, expect.stringContaining('Tool "no_such_tool" does not exist')],
      [actions[1]!.tool_call_id, expect.stringContaining('are not valid JSON')],
      [actions[2]!.tool_call_id, expect.stringContaining('Invalid arguments for tool "terminal"')],
    ]);
    expect(modelSteps(events)).toBe(3);
    expect(ofType(events, 'conversation_error')).toEqual([
      expect.objectContaining({
        code: 'invalid_replies',
        detail: expect.stringContaining("The model's last 3 replies in a row could not be used"),
      }),
    ]);
    expect(ofType(events, 'observation')).toEqual([]);
    expect((await system.readEffects()).filter((line) => line.startsWith('invalid-calls '))).toEqual([]);
    await expectUnharmed(system, calm, [hostile]);
  }, 60_000);

  it('a reply that never ends is cut off at llm.maxReplyChars: one attempt, the connection closed, memory bounded, the run ends in error', async () => {
    await using system = await startTestSystem();
    const hostile = { tenant: 'acme', conversation: 'endless-stream' };
    const calm = { tenant: 'acme', conversation: 'calm-beside-endless' };
    const started = Date.now();
    await system.start(hostile, { id: 'endless-stream', steps: 1, hostile: 'endless_stream' });
    await system.start(calm, { id: calm.conversation, steps: CALM_STEPS });
    // the step worker's memory while the stream runs (without the bound it grows until the 60 s timeout, at network speed)
    let peakRss = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const text = await (await fetch(`${system.healthUrls.get('step-worker-1')}/metrics`)).text().catch(() => '');
        const line = text.split('\n').find((candidate) => candidate.startsWith('process_resident_memory_bytes'));
        if (line) peakRss = Math.max(peakRss, Number(line.slice(line.lastIndexOf(' ') + 1)));
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    await settle(system, [hostile, calm], 30_000).finally(() => {
      sampling = false;
    });
    await sampler;
    console.log(
      `endless stream: at rest after ${Date.now() - started} ms; step worker peak RSS ${Math.round(peakRss / 2 ** 20)} MiB`,
    );

    expect(await system.status(hostile)).toBe('error');
    const events = await system.events(hostile);
    expect(ofType(events, 'conversation_error')).toEqual([
      expect.objectContaining({ code: 'llm_reply_too_large', detail: expect.stringContaining('(llm.maxReplyChars)') }),
    ]);
    expect(ofType(events, 'state_change').at(-1)).toMatchObject({
      status: 'error',
      reason: 'the model call failed (reply_too_large)',
    });
    // not retried, and the connection was closed (the brain stopped writing)
    const calls = system.brain.calls.filter((call) => call.task === 'endless-stream');
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ completed: false, closedAt: expect.any(Number) });
    expect(peakRss).toBeGreaterThan(0);
    expect(peakRss).toBeLessThan(1024 * 2 ** 20);
    await expectUnharmed(system, calm, [hostile]);
  }, 60_000);

  it('tool calls written as text are never run nor taken for the answer: the model is told to call the tool, and a model that goes on ends in error', async () => {
    await using system = await startTestSystem();
    const stubborn = { tenant: 'acme', conversation: 'text-calls' };
    const corrected = { tenant: 'acme', conversation: 'text-call-once' };
    const calm = { tenant: 'acme', conversation: 'calm-beside-text' };
    await system.start(stubborn, { id: 'text-calls', steps: 1, hostile: 'text_tool_calls' });
    await system.start(corrected, { id: 'text-call-once', steps: 2, hostile: 'text_tool_calls', hostileTurns: 1 });
    await system.start(calm, { id: calm.conversation, steps: CALM_STEPS });
    await settle(system, [stubborn, corrected, calm], 30_000);

    // every reply wrote a call as text (<function=…>, a JSON object, a <tool_call> block): kept as said, answered, nothing run
    expect(await system.status(stubborn)).toBe('error');
    const events = await system.events(stubborn);
    expect(ofType(events, 'action')).toEqual([]);
    const said = ofType(events, 'message').filter((message) => message.source === 'agent');
    expect(
      said.map((message) => message.content.map((part) => (part.type === 'text' ? part.text : '')).join('')),
    ).toEqual([
      expect.stringContaining('<function=terminal>'),
      expect.stringMatching(/^\{"tool":"terminal"/),
      expect.stringContaining('<tool_call>'),
    ]);
    const corrections = ofType(events, 'agent_error');
    expect(corrections).toHaveLength(3);
    for (const correction of corrections) {
      expect(correction.tool_call_id).toBeUndefined();
      expect(correction.error).toContain('wrote a call to the tool "terminal" as text');
    }
    expect(ofType(events, 'state_change').some((change) => change.status === 'finished')).toBe(false);
    expect(ofType(events, 'conversation_error')).toEqual([
      expect.objectContaining({
        code: 'invalid_replies',
        detail: expect.stringContaining('as text instead of calling the tool'),
      }),
    ]);
    expect((await system.readEffects()).filter((line) => line.startsWith('text-calls '))).toEqual([]);

    // a model that takes the correction goes on with native calls and finishes its task
    expect(await system.status(corrected)).toBe('finished');
    const correctedEvents = await system.events(corrected);
    expect(ofType(correctedEvents, 'agent_error')).toHaveLength(1);
    expect(ofType(correctedEvents, 'observation')).toHaveLength(2);
    expect((await system.readEffects()).filter((line) => line.startsWith('text-call-once '))).toHaveLength(2);
    await expectUnharmed(system, calm, [stubborn, corrected]);
  }, 60_000);
});
