import { readFile } from 'node:fs/promises';
import { auditConversation, formatReport } from '@flotilla/auditor';
import { describe, expect, it } from 'vitest';
import { startTestSystem } from '../support/system.js';

describe('the distributed runtime, one process per service', () => {
  it('runs a conversation to finished through real tools', async () => {
    await using system = await startTestSystem();
    const ref = { tenant: 'acme', conversation: 'first' };
    await system.start(ref, { id: 'first', steps: 3 });
    await system.waitForStatus([ref], ['finished', 'error', 'stuck'], 60_000);
    expect(await system.status(ref)).toBe('finished');
    const events = await system.events(ref);
    const types = events.map((event) => event.type);
    expect(types.filter((type) => type === 'action')).toHaveLength(3);
    expect(types.filter((type) => type === 'observation')).toHaveLength(3);
    expect(types.filter((type) => type === 'execution_started')).toHaveLength(3);
    const effects = (await readFile(system.effects, 'utf8')).trim().split('\n');
    expect(effects).toEqual(['first 0 0', 'first 1 0', 'first 2 0']);
    expect(events.at(-1)).toMatchObject({ type: 'state_change', status: 'finished' });
    const report = await auditConversation(system.log, ref);
    expect(report.violations, formatReport(report)).toEqual([]);
  }, 120_000);
});
