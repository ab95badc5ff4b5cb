import { positionOfEventId, withPositionalIds } from '@flotilla/events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LogError } from './errors.js';
import { tailOf } from './stored-commit.js';
import { logFixture, newRef, userMessage, type LogFixture } from './test-support/fixtures.js';

let fixture: LogFixture;
beforeAll(async () => {
  fixture = await logFixture();
});
afterAll(async () => {
  await fixture?.[Symbol.asyncDispose]();
});

describe('positional event ids in the log', () => {
  it('are stored as given in the commit they name, and refused in any other, before anything is written', async () => {
    const { log } = fixture;
    const ref = newRef();
    const first = await log.append(ref, withPositionalIds([userMessage(ref, 'a'), userMessage(ref, 'b')], 1), {
      expected: await log.tail(ref),
    });
    expect(first.events.map((event) => positionOfEventId(event.id))).toEqual([1, 1]);
    const stale = withPositionalIds([userMessage(ref, 'c')], 1); // decided at the empty log, appended after the first commit
    const refused = await log.append(ref, stale, { expected: tailOf(first) }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(LogError);
    expect(refused).toMatchObject({ code: 'invalid_event', issues: [{ path: 'events.0.id' }] });
    expect(await log.tail(ref)).toEqual(tailOf(first));
    const placed = await log.append(ref, withPositionalIds(stale, 3), { expected: tailOf(first) });
    expect(positionOfEventId(placed.events[0]!.id)).toBe(3);
    const { events } = await log.readEvents(ref);
    expect(events.map((event) => event.id)).toEqual([...first.events, ...placed.events].map((event) => event.id));
  });

  it('leave other ids alone: drafts without positional ids append as before', async () => {
    const { log } = fixture;
    const ref = newRef();
    const draft = userMessage(ref, 'plain');
    const commit = await log.append(ref, [draft], { expected: await log.tail(ref) });
    expect(commit.events[0]!.id).toBe(draft.id);
    expect(positionOfEventId(draft.id)).toBeUndefined();
  });
});
