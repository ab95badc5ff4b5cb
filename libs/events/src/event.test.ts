import { describe, expect, it } from 'vitest';
import { EVENT_TYPES, Event, parseEvent, safeParseEvent } from './event.js';
import { ProtocolErrorCode } from './errors.js';
import { CURRENT_PROTOCOL_VERSION } from './version.js';
import { goldenEvents } from './test-support/fixtures.js';

describe('EVENT_TYPES', () => {
  it('lists exactly the members of the Event union, in order', () => {
    expect(Event.options.map((option) => option.shape.type.value)).toEqual([...EVENT_TYPES]);
  });
});

describe('parseEvent', () => {
  const message = goldenEvents().find((fixture) => fixture.name === 'message.user')?.value as Record<string, unknown>;

  it('names every unknown field at the field itself', () => {
    const result = safeParseEvent({ ...message, colour: 'blue', size: 3 });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.code).toBe(ProtocolErrorCode.InvalidEvent);
    expect(result.error.issues.map((issue) => issue.path).sort()).toEqual(['colour', 'size']);
  });

  it('reports every bad field at once', () => {
    const result = safeParseEvent({ ...message, seq: -1, tenant: 'a.b', role: 'robot' });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.issues.map((issue) => issue.path).sort()).toEqual(['role', 'seq', 'tenant']);
  });

  it('fails loudly on a future version, saying what to do', () => {
    expect(() => parseEvent({ ...message, v: CURRENT_PROTOCOL_VERSION + 1, some_new_field: true })).toThrowError(
      new RegExp(`protocol version ${CURRENT_PROTOCOL_VERSION + 1}.*Upgrade Flotilla`),
    );
  });

  it('rejects values that are not objects as foreign messages', () => {
    for (const value of [null, 'hello', 42, [message]]) {
      const result = safeParseEvent(value);
      expect(result.ok).toBe(false);
    }
  });

  it('returns the parsed event from safeParseEvent', () => {
    expect(safeParseEvent(message)).toEqual({ ok: true, value: message });
  });
});
