import { bench, describe } from 'vitest';
import { manipulationIndices } from './manipulation-indices.js';
import { toChatMessages } from './chat-messages.js';
import { longLog } from './testing/long-log.js';
import { buildView, ViewBuilder } from './view-builder.js';

// Run with: npx vitest bench libs/view
for (const size of [1_000, 10_000]) {
  const events = longLog(size);
  const view = buildView(events);
  describe(`${size} events`, () => {
    bench('buildView', () => {
      buildView(events);
    });
    bench('manipulationIndices', () => {
      manipulationIndices(view);
    });
    bench('toChatMessages', () => {
      toChatMessages(view);
    });
    bench('ViewBuilder: load all but 20 events, then append 20 one by one reading the view', () => {
      const builder = new ViewBuilder().append(events.slice(0, -20));
      for (const event of events.slice(-20)) builder.append([event]).view();
    });
  });
}
