import { parseConversationCheckpoint, resumeFolds } from '@flotilla/agent';
import { CheckpointStore, loadConversation } from '@flotilla/runtime';
import { buildView } from '@flotilla/view';
import { describe, expect, it } from 'vitest';
import { startTestSystem } from '../support/system.js';
import { expectAudited } from '../support/audited.js';

/** Polls `observe` until it returns a value, failing after `timeoutMs` with what it waited for and saw last. */
async function waitFor<T>(
  what: string,
  observe: () => Promise<{ value?: T; seen: string }>,
  timeoutMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { value, seen } = await observe();
    if (value !== undefined) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last seen: ${seen}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('view checkpoints through the services', () => {
  it('the projector keeps a checkpoint at the last condensation; a step worker restarted mid-run loads from it and the run finishes', async () => {
    await using system = await startTestSystem({
      condensers: 1,
      agent: { condenser: { maxEvents: 16, keepFirst: 2 } },
    });
    const ref = { tenant: 'acme', conversation: 'checkpointed' };
    const checkpoints = await CheckpointStore.open(system.nc, { parse: parseConversationCheckpoint });
    await system.start(ref, { id: 'checkpointed', steps: 70 });
    // long enough for a restarted step worker to look for a checkpoint (200 events)
    await waitFor(
      'a checkpoint past 220 events',
      async () => {
        const stored = await checkpoints.get(ref);
        return {
          ...(stored && stored.lastSeq > 220 ? { value: stored } : {}),
          seen: `checkpoint ${stored ? `at seq ${stored.lastSeq}` : 'none'}`,
        };
      },
      90_000,
    );
    const stepWorker = system.processes.find((process) => process.name === 'step-worker-1');
    await stepWorker?.kill('SIGKILL', { restart: true });
    await system.waitForStatus([ref], ['finished', 'error', 'stuck'], 150_000);
    expect(await system.status(ref)).toBe('finished');
    const metrics = await (await fetch(`${system.healthUrls.get('step-worker-1')}/metrics`)).text();
    expect(metrics).toMatch(/flotilla_cold_loads_total\{[^}]*source="checkpoint"[^}]*\} [1-9]/);

    const events = await system.events(ref);
    const lastCondensation = events.findLast((event) => event.type === 'condensation');
    const stored = await checkpoints.get(ref);
    expect(stored?.lastSeq).toBeGreaterThanOrEqual(lastCondensation?.seq ?? Number.POSITIVE_INFINITY);
    const tail = await system.log.tail(ref);
    const loaded = await loadConversation(system.log, ref, tail.streamSeq, { store: checkpoints });
    expect(loaded.start).toBeDefined();
    expect(loaded.events.length).toBeLessThan(events.length);
    const folds = resumeFolds(loaded.start?.state, loaded.start?.folded);
    folds.view.append(loaded.events.slice(loaded.start?.folded));
    expect(folds.view.view()).toEqual(buildView(events));
    expect(events.filter((event) => event.type === 'action')).toHaveLength(70);
    await expectAudited(system.log, ref);
  }, 300_000);
});
