import type { Event } from '@flotilla/events';
import { buildView } from '../view-builder.js';
import { TestLog } from './test-log.js';

/** A long agent run: user turns, parallel batches with results, and a rolling condensation every 2,000 events. */
export function longLog(size: number): Event[] {
  const log = new TestLog();
  log.system();
  let lastSummary: string | undefined;
  while (log.events.length < size) {
    log.user('next task');
    for (let step = 0; step < 5; step += 1) {
      const actions = log.batch({ size: 1 + (step % 3), thinking: step === 0 });
      for (const action of actions) log.observe(action);
    }
    log.agent('done');
    if (log.events.length % 2000 < 30) {
      const view = buildView(log.events);
      const forgotten = view.items.slice(1, Math.floor(view.items.length / 2)).map((item) => item.id);
      const boundary = view.items.findIndex((item, index) => index >= forgotten.length + 1 && item.type === 'message');
      lastSummary = log.condense(
        view.items.slice(1, boundary).map((item) => item.id),
        `summary after ${lastSummary ?? 'nothing'}`,
        1,
      ).id;
    }
  }
  return log.events;
}
