import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Commit, parseCommit } from './commit.js';
import { Event, EVENT_TYPES } from './event.js';
import { isValidCommitEnvelope, isValidEvent } from './fast-validation.js';
import { readCommit } from './read-commit.js';
import { anyEvent } from './test-support/arbitraries.js';
import { goldenCommits, goldenEvents, negativeFixtures } from './test-support/fixtures.js';
import { mutatedEvent } from './test-support/mutations.js';

describe('the fast read path agrees with zod', () => {
  it('on every golden and negative fixture', () => {
    for (const fixture of goldenEvents()) expect(isValidEvent(fixture.value), fixture.name).toBe(true);
    for (const fixture of goldenCommits()) expect(readCommit(fixture.value)).toEqual(parseCommit(fixture.value));
    for (const fixture of negativeFixtures()) {
      if (fixture.kind === 'event')
        expect(isValidEvent(fixture.value), fixture.description).toBe(Event.safeParse(fixture.value).success);
      else {
        if (!Commit.safeParse(fixture.value).success)
          expect(isValidCommitEnvelope(fixture.value), fixture.description).toBe(false);
        const codeOf = (read: (value: unknown) => unknown): unknown => {
          try {
            read(fixture.value);
            return 'accepted';
          } catch (error) {
            return (error as { code?: string }).code;
          }
        };
        expect(codeOf(readCommit), fixture.description).toBe(codeOf(parseCommit));
        expect(codeOf(readCommit), fixture.description).not.toBe('accepted');
      }
    }
  });

  it('on random valid events and random broken ones', () => {
    fc.assert(
      fc.property(anyEvent(EVENT_TYPES), (event) => isValidEvent(event) && Event.safeParse(event).success),
      { numRuns: 300 },
    );
    fc.assert(
      fc.property(mutatedEvent, ({ value }) => isValidEvent(value) === Event.safeParse(value).success),
      { numRuns: 300 },
    );
  });
});
