import fc from 'fast-check';
import type { z } from 'zod';
import { Event, EVENT_TYPES, type EventType } from '../event.js';
import { anyEvent } from './arbitraries.js';

/** A valid event broken in one top-level field, and the field a validator must name. */
export type MutatedEvent = {
  readonly value: Record<string, unknown>;
  readonly field: string;
  readonly how: 'drop' | 'retype';
};

function schemaOf(type: EventType): z.ZodObject {
  const schema = Event.options.find((option) => option.shape.type.value === type);
  if (schema === undefined) throw new Error(`no schema for ${type}`);
  return schema as unknown as z.ZodObject;
}

export function isRequired(type: EventType, key: string): boolean {
  const field = schemaOf(type).shape[key];
  return field !== undefined && !field.safeParse(undefined).success;
}

/** A JSON value of another type than `value` (no field accepts both a string and a number). */
function wrongTypeFor(value: unknown): unknown {
  return typeof value === 'string' ? 12345 : 'not the right type';
}

/** Drops a random required field, or gives a random present field a value of the wrong type. */
export const mutatedEvent: fc.Arbitrary<MutatedEvent> = fc
  .tuple(anyEvent(EVENT_TYPES), fc.nat(), fc.constantFrom('drop' as const, 'retype' as const))
  .map(([event, pick, how]) => {
    const record = event as Record<string, unknown>;
    if (how === 'drop') {
      const required = Object.keys(record).filter((key) => isRequired(event.type, key));
      const field = required[pick % required.length] as string;
      const { [field]: _dropped, ...value } = record;
      return { value, field, how };
    }
    const keys = Object.keys(record);
    const field = keys[pick % keys.length] as string;
    return { value: { ...record, [field]: wrongTypeFor(record[field]) }, field, how };
  });
