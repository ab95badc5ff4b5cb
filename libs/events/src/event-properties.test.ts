import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ProtocolError, ProtocolErrorCode } from './errors.js';
import { EVENT_TYPES, Event, parseEvent, type EventType } from './event.js';
import { anyEvent, eventOfType } from './test-support/arbitraries.js';

function schemaOf(type: EventType): z.ZodObject {
  const schema = Event.options.find((option) => option.shape.type.value === type);
  if (schema === undefined) throw new Error(`no schema for ${type}`);
  return schema as unknown as z.ZodObject;
}

function isRequired(type: EventType, key: string): boolean {
  const field = schemaOf(type).shape[key];
  return field !== undefined && !field.safeParse(undefined).success;
}

/** A JSON value of another type than `value`. */
function wrongTypeFor(value: unknown): unknown {
  return typeof value === 'string' ? 12345 : 'not the right type';
}

function rejection(value: unknown): ProtocolError {
  try {
    parseEvent(value);
  } catch (error) {
    if (error instanceof ProtocolError) return error;
    throw error;
  }
  throw new Error(`accepted an invalid event: ${JSON.stringify(value)}`);
}

function expectNamed(error: ProtocolError, field: string): void {
  expect(error.code).toBe(field === 'v' ? ProtocolErrorCode.UnsupportedVersion : ProtocolErrorCode.InvalidEvent);
  expect(error.issues.map((issue) => issue.path)).toEqual(error.issues.map(() => field));
  expect(error.issues.length).toBeGreaterThan(0);
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

  it('dropping any required field is rejected, naming that field', () => {
    fc.assert(
      fc.property(anyEvent(EVENT_TYPES), fc.nat(), (event, pick) => {
        const required = Object.keys(event).filter((key) => isRequired(event.type, key));
        const field = required[pick % required.length] as string;
        const { [field]: _dropped, ...mutated } = event as Record<string, unknown>;
        expectNamed(rejection(mutated), field);
      }),
      { numRuns: 500 },
    );
  });

  it('giving any present field a value of the wrong type is rejected, naming that field', () => {
    fc.assert(
      fc.property(anyEvent(EVENT_TYPES), fc.nat(), (event, pick) => {
        const keys = Object.keys(event);
        const field = keys[pick % keys.length] as string;
        const record = event as Record<string, unknown>;
        expectNamed(rejection({ ...record, [field]: wrongTypeFor(record[field]) }), field);
      }),
      { numRuns: 500 },
    );
  });

  it('an unknown field is rejected, naming that field', () => {
    fc.assert(
      fc.property(anyEvent(EVENT_TYPES), fc.stringMatching(/^x_[a-z_]{1,20}$/), fc.jsonValue(), (event, field, value) => {
        expectNamed(rejection({ ...event, [field]: value }), field);
      }),
      { numRuns: 200 },
    );
  });
});
