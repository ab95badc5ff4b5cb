import { describe, expect, it } from 'vitest';
import { runChaos } from '../chaos/chaos-run.js';

describe('chaos (short run; `npm run chaos` for the long one)', () => {
  it('SIGKILLs random service processes while 50 conversations run: all finish, logs clean, no action ran twice', async () => {
    const result = await runChaos({
      durationMs: 40_000,
      conversations: 50,
      steps: 8,
      actionSeconds: 0.3,
      killEveryMs: 2_500,
    });
    console.log(`chaos: ${JSON.stringify({ ...result, auditFailures: result.auditFailures.length })}`);
    expect(result.auditFailures).toEqual([]);
    expect(result.duplicatedEffects).toEqual([]);
    expect(result.missingEffects).toEqual([]);
    expect(result.finished).toBe(result.conversations);
    expect(Object.values(result.kills).reduce((sum, count) => sum + count, 0)).toBeGreaterThanOrEqual(8);
  }, 360_000);
});
