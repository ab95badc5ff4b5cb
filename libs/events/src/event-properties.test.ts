import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ProtocolError, ProtocolErrorCode } from './errors.js';
import { EVENT_TYPES, parseEvent } from './event.js';
import { anyEvent, eventOfType } from './test-support/arbitraries.js';
import { mutatedEvent } from './test-support/mutations.js';

function rejection(value: unknown): ProtocolError {
  try {
    parseEvent(value);
  } catch (error) {
    if (error instanceof ProtocolError) return error;
    throw error;
  }
  throw new Error(`accepted an invalid event: ${JSON.stringify(value)}`);
}

/** The error names `field` and nothing else. */
function expectNamed(error: ProtocolError, field: string): void {
  expect(error.code).toBe(field === 'v' ? ProtocolErrorCode.UnsupportedVersion : ProtocolErrorCode.InvalidEvent);
  expect(error.issues.length).toBeGreaterThan(0);
  expect(error.issues.map((issue) => issue.path)).toEqual(error.issues.map(() => field));
}

describe('random valid events', () => {
  it.each(EVENT_TYPES)('%s: parse(serialize(event)) equals the event', (type) => {
    fc.assert(
      fc.property(eventOfType(type), (event) => {
        expect(parseEvent(JSON.parse(JSON.stringify(event)))).toStrictEqual(event);
      }),
      { numRuns: 150 },
    );
  });

  it('with a required field dropped, or any field of the wrong type, are rejected naming that field', () => {
    fc.assert(
      fc.property(mutatedEvent, ({ value, field }) => {
        expectNamed(rejection(value), field);
      }),
      { numRuns: 1000 },
    );
  });

  it('with an unknown field are rejected naming that field', () => {
    fc.assert(
      fc.property(
        anyEvent(EVENT_TYPES),
        fc.stringMatching(/^x_[a-z_]{1,20}$/),
        fc.jsonValue(),
        (event, field, value) => {
          expectNamed(rejection({ ...event, [field]: value }), field);
        },
      ),
      { numRuns: 200 },
    );
  });
});
