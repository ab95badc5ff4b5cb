import { describe, expect, it } from 'vitest';
import type { ActionEvent } from '@flotilla/events';
import { manipulationIndices, viewBlocks } from './manipulation-indices.js';
import { TestLog } from './testing/test-log.js';
import { buildView } from './view-builder.js';

function answered(log: TestLog, options: { size?: number; thinking?: boolean } = {}): ActionEvent[] {
  const actions = log.batch(options);
  for (const action of actions) log.observe(action);
  return actions;
}

describe('manipulationIndices', () => {
  it('offers the position after the system prompt, every message boundary and the end', () => {
    const log = new TestLog();
    log.system();
    log.user('a');
    log.agent('b');
    expect(manipulationIndices(buildView(log.events))).toEqual([1, 2, 3]);
  });

  it('starts at 0 without a system prompt and offers [0] for an empty view', () => {
    expect(manipulationIndices({ items: [], unhandledCondensationRequest: false })).toEqual([0]);
    const log = new TestLog();
    log.user('a');
    expect(manipulationIndices(buildView(log.events))).toEqual([0, 1]);
  });

  it('never cuts inside a parallel batch or between calls and results', () => {
    const log = new TestLog();
    log.system();
    log.user('go');
    answered(log, { size: 3 }); // positions 2..7
    answered(log); // positions 8..9
    log.agent('done'); // 10
    expect(manipulationIndices(buildView(log.events))).toEqual([1, 2, 8, 10, 11]);
  });

  it('treats a run from its first thinking batch to the next non-tool item as atomic', () => {
    const log = new TestLog();
    log.system();
    log.user('go'); // 1
    answered(log); // 2..3, no thinking: may be cut after
    answered(log, { thinking: true }); // 4..5 opens the loop
    answered(log); // 6..7 continues it
    answered(log, { size: 2 }); // 8..11 continues it
    log.user('next'); // 12
    answered(log); // 13..14 no thinking
    answered(log); // 15..16
    const view = buildView(log.events);
    expect(manipulationIndices(view)).toEqual([1, 2, 4, 12, 13, 15, 17]);
    expect(
      viewBlocks(view)
        .filter((block) => block.thinking)
        .map((block) => block.start),
    ).toEqual([4]);
  });
});
