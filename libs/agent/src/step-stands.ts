import type { Event } from '@flotilla/events';
import { onlyTitles } from './title-progress.js';

/**
 * True when the events that landed after the tail a step was decided on leave that step standing:
 * a title (`onlyTitles`), or a pause (the `pause` event and its `paused` status, the user's or a
 * parent's). A pause stops the run after the current step (docs/api.md): the step's model call
 * is paid for, so its reply is appended after the pause as it is, and the run then rests paused
 * (its actions run on resume). Anything else — a message, an interrupt, a resume, a condensation —
 * changes what the step decides from: it is thrown away and the next delivery decides again.
 */
export function stepStandsAfter(events: readonly Event[]): boolean {
  return (
    events.length > 0 && events.every((event) => onlyTitles([event]) || event.type === 'pause' || isPausedStatus(event))
  );
}

function isPausedStatus(event: Event): boolean {
  return (
    event.type === 'state_change' &&
    event.status === 'paused' &&
    event.title === undefined &&
    event.tags === undefined &&
    event.settings_ref === undefined
  );
}
