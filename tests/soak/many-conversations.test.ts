import { draftEvent } from '@flotilla/events';
import { EMPTY_TAIL, type ConversationRef } from '@flotilla/log';
import { describe, expect, it } from 'vitest';
import { startTestSystem } from '../support/system.js';

/**
 * Past where nats-server 2.15 stalled a consumer per read (~1,000) within the suite's time;
 * `npm run test:scale` runs 10,000 (about 6 minutes on 2 cores).
 */
const CONVERSATIONS = conversationsToRun(process.env['FLOTILLA_TEST_CONVERSATIONS']);

function conversationsToRun(value: string | undefined): number {
  if (value === undefined) return 2_000;
  const count = Number(value);
  if (!Number.isInteger(count) || count < 1 || count > 10_000)
    throw new Error(`FLOTILLA_TEST_CONVERSATIONS must be an integer from 1 to 10000, not ${value}`);
  return count;
}
/** Events each conversation holds before its first step: more than its first step reads back in one direct get. */
const HISTORY = 10;
/** Each model call's latency: every conversation is live (waiting on its model) at once. */
const MODEL_LATENCY_MS = 20_000;

describe('many live conversations', () => {
  it(`keeps ${CONVERSATIONS.toLocaleString('en')} conversations with long histories moving, reading them without a consumer each`, async () => {
    // a slow model keeps the offered load within a small machine while every conversation is live
    // at once: the step worker holds a model call in flight for each (its concurrency sized to
    // them), and each conversation's first step cold-loads a history of HISTORY events. Titles are
    // off: one model call per conversation at its start, which is not what this is about.
    await using system = await startTestSystem({
      model: 'in-process',
      condensers: 1,
      captureLogs: true,
      agent: { titles: { generate: false } },
      stepWorkerEnv: { FLOTILLA_CONCURRENCY: String(CONVERSATIONS) },
      // the services' own ack wait: a step's commit is kept alive through its model call either way
      env: { FLOTILLA_ACK_WAIT_MS: '30000' },
    });
    const refs: ConversationRef[] = Array.from({ length: CONVERSATIONS }, (_, index) => ({
      tenant: `t${index % 4}`,
      conversation: `many-${index}`,
    }));
    const history = (ref: ConversationRef) =>
      Array.from({ length: HISTORY }, (_, index) =>
        draftEvent({ ...ref, source: 'user' }, 'message', {
          role: 'user',
          content: [{ type: 'text', text: `earlier note ${index}` }],
        }),
      );
    for (let at = 0; at < refs.length; at += 250) {
      await Promise.all(
        refs.slice(at, at + 250).map((ref) => system.log.append(ref, history(ref), { expected: EMPTY_TAIL })),
      );
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
        await Promise.all(
          refs
            .slice(at, at + 250)
            .map((ref) =>
              system.start(ref, { id: ref.conversation, steps: 1, tool: 'think', latencyMs: MODEL_LATENCY_MS }),
            ),
        );
      }
      await system.waitForStatus(refs, ['finished', 'error', 'stuck'], 800_000);
    } finally {
      sampling = false;
      await sampler;
    }

    // every conversation advanced: a think step and the final answer after its history
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
    expect(Object.fromEntries(statuses)).toEqual({ [`finished observations=1 answered=true`]: CONVERSATIONS });
    expect(system.logLines.filter((line) => /maximum consumers/i.test(line))).toEqual([]);
    // reads took no consumer: only the service groups' durable consumers were ever there
    expect(groups).toBeGreaterThan(0);
    expect(mostConsumers).toBe(groups);
  }, 900_000);
});
