import type { EventType } from '@flotilla/events';
import { LogError, LogErrorCode } from '../errors.js';
import type { EventLog } from '../event-log.js';

/** When an append loses its answer: before the commit reached the stream, or after it was stored. */
export type LostWhen = 'before_stored' | 'after_stored';

/**
 * `log`, except that its first append holding an event of type `of` loses its answer, as a publish
 * cut off by a nats-server restart or a leader election does: it throws the transient "did not
 * complete", whether or not the commit was stored (`when`). `lost()` counts the answers lost.
 */
export function losingFirstAnswer(
  log: EventLog,
  of: EventType,
  when: LostWhen,
): { readonly log: EventLog; readonly lost: () => number } {
  let lost = 0;
  const faulty = new Proxy(log, {
    get(target, property) {
      if (property === 'append') {
        return async (...args: Parameters<EventLog['append']>) => {
          if (lost > 0 || !args[1].some((draft) => draft.type === of)) return target.append(...args);
          lost += 1;
          if (when === 'after_stored') await target.append(...args);
          throw new LogError(LogErrorCode.Transient, 'append: it did not complete (the answer was lost)');
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { log: faulty, lost: () => lost };
}
