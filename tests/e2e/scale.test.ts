import { describe, expect, it } from 'vitest';
import { basicViolations, effectCounts } from '../support/log-checks.js';
import { startTestSystem } from '../support/system.js';
import { expectAudited } from '../support/audited.js';

describe('scale-out', () => {
  it('2 step workers and 2 tool runners finish 50 concurrent conversations with clean logs', async () => {
    await using system = await startTestSystem({ stepWorkers: 2, toolRunners: 2 });
    const refs = Array.from({ length: 50 }, (_, index) => ({ tenant: `t${index % 3}`, conversation: `scale-${index}` }));
    await Promise.all(refs.map((ref) => system.start(ref, { id: ref.conversation, steps: 3, parallel: 2 })));
    await system.waitForStatus(refs, ['finished', 'error', 'stuck'], 120_000);
    const effects = await effectCounts(await system.readEffects());
    for (const ref of refs) {
      expect(await system.status(ref)).toBe('finished');
      const events = await system.events(ref);
      expect(basicViolations(events)).toEqual([]);
      await expectAudited(system.log, ref);
      for (let step = 0; step < 3; step += 1) {
        for (let index = 0; index < 2; index += 1) expect(effects.get(`${ref.conversation} ${step} ${index}`)).toBe(1);
      }
    }
    // both runners and both workers did work
    const runners = new Set<string>();
    for (const ref of refs) for (const event of await system.events(ref)) if (event.type === 'execution_started') runners.add(event.runner);
    expect(runners.size).toBe(2);
  }, 240_000);
});
