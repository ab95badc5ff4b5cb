import { draftEvent } from '@flotilla/events';
import { EMPTY_TAIL, type ConversationRef } from '@flotilla/log';
import { describe, expect, it } from 'vitest';
import { startTestSystem } from '../support/system.js';

const CONVERSATIONS = 3_000;
/** Events each conversation holds before its first step: past what a few direct gets would read. */
const HISTORY = 40;

describe('many live conversations', () => {
  it(`keeps ${CONVERSATIONS.toLocaleString('en')} conversations with long histories moving, reading them without a consumer each`, async () => {
    // a slow model (3 s a call) keeps the offered load within a small machine while every
    // conversation is live at once: the step worker holds up to 1,024 steps in flight, and each
    // conversation's first step cold-loads a history of HISTORY events
    await using system = await startTestSystem({ model: 'in-process', condensers: 1, captureLogs: true });
    const refs: ConversationRef[] = Array.from({ length: CONVERSATIONS }, (_, index) => ({ tenant: `t${index % 4}`, conversation: `many-${index}` }));
    const history = (ref: ConversationRef) =>
      Array.from({ length: HISTORY }, (_, index) => draftEvent({ ...ref, source: 'user' }, 'message', { role: 'user', content: [{ type: 'text', text: `earlier note ${index}` }] }));
    for (let at = 0; at < refs.length; at += 250) {
      await Promise.all(refs.slice(at, at + 250).map((ref) => system.log.append(ref, history(ref), { expected: EMPTY_TAIL })));
    }

    // the events stream's consumers, sampled all along: the service groups' only
    let mostConsumers = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const info = await system.log.jsm.streams.info(system.log.streamName).catch(() => undefined);
        if (info) mostConsumers = Math.max(mostConsumers, info.state.consumer_count);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    const groups = (await system.log.jsm.streams.info(system.log.streamName)).state.consumer_count;

    try {
      for (let at = 0; at < refs.length; at += 250) {
        await Promise.all(refs.slice(at, at + 250).map((ref) => system.start(ref, { id: ref.conversation, steps: 2, tool: 'think', latencyMs: 3_000 })));
      }
      await system.waitForStatus(refs, ['finished', 'error', 'stuck'], 150_000);
    } finally {
      sampling = false;
      await sampler;
    }

    // every conversation advanced: two think steps and the final answer after its history
    const statuses = new Map<string, number>();
    for (let at = 0; at < refs.length; at += 250) {
      const slice = await Promise.all(
        refs.slice(at, at + 250).map(async (ref) => {
          const events = await system.events(ref);
          const observations = events.filter((event) => event.type === 'observation').length;
          const answered = events.some((event) => event.type === 'message' && event.source === 'agent');
          return `${await system.status(ref)} observations=${observations} answered=${answered}`;
        }),
      );
      for (const line of slice) statuses.set(line, (statuses.get(line) ?? 0) + 1);
    }
    expect(Object.fromEntries(statuses)).toEqual({ [`finished observations=2 answered=true`]: CONVERSATIONS });
    expect(system.logLines.filter((line) => /maximum consumers/i.test(line))).toEqual([]);
    // reads took no consumer: only the service groups' durable consumers were ever there
    expect(groups).toBeGreaterThan(0);
    expect(mostConsumers).toBe(groups);
  }, 240_000);
});
