import { describe, expect, it } from 'vitest';
import { longLog } from './testing/long-log.js';
import { buildView, ViewBuilder } from './view-builder.js';

// Loose bounds that only a quadratic regression breaks; the figures live in view.bench.ts.
describe('speed', () => {
  it('builds the view of 10,000 events in well under a second', () => {
    const events = longLog(10_000);
    const started = performance.now();
    const view = buildView(events);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(view.items.length).toBeGreaterThan(100);
  });

  it('appends 10,000 events one by one, reading the view after each', () => {
    const events = longLog(10_000);
    const builder = new ViewBuilder();
    const started = performance.now();
    for (const event of events) builder.append([event]).view();
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(builder.view()).toEqual(buildView(events));
  });
});
