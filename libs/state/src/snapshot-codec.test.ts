import { describe, expect, it } from 'vitest';
import { CURRENT_SNAPSHOT_VERSION } from './conversation-snapshot.js';
import { StateError } from './errors.js';
import { foldCommits, initialSnapshot } from './fold.js';
import { decodeSnapshot, encodeSnapshot } from './snapshot-codec.js';
import { commitsOf, EventFactory } from './test-support/events.js';

const ref = { tenant: 'acme', conversation: 'c1' };
const encode = (value: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(value));

describe('snapshot codec', () => {
  const events = new EventFactory(ref);
  const snapshot = foldCommits(
    initialSnapshot(ref),
    commitsOf(ref, [
      [events.userMessage(), events.stateChange({ status: 'running', title: 'T' })],
      [events.llmUsage({ cost: 0.1 })],
      [events.llmUsage({ cost: 0.2 })],
    ]),
  );

  it('round-trips a snapshot exactly (floats included)', () => {
    const decoded = decodeSnapshot(encodeSnapshot(snapshot), ref);
    expect(decoded).toEqual({ ok: true, snapshot });
    expect(decoded.ok && decoded.snapshot.usage.cost_usd).toBe(0.1 + 0.2);
  });

  it('reports bytes that are not JSON', () => {
    expect(decodeSnapshot(new Uint8Array([0xff, 0xfe, 0x00]), ref)).toMatchObject({ ok: false });
    expect(decodeSnapshot(new TextEncoder().encode('{"v":1,'), ref)).toMatchObject({
      ok: false,
      reason: expect.stringContaining('not JSON'),
    });
  });

  it('reports schema violations, unknown fields and broken invariants', () => {
    expect(decodeSnapshot(encode({ ...snapshot, status: 'sleeping' }), ref)).toMatchObject({
      ok: false,
      issues: [{ path: 'status' }],
    });
    expect(decodeSnapshot(encode({ ...snapshot, colour: 'red' }), ref)).toMatchObject({
      ok: false,
      issues: [{ path: 'colour', message: 'unknown field' }],
    });
    const drifted = { ...snapshot, counters: { ...snapshot.counters, events: snapshot.counters.events + 1 } };
    expect(decodeSnapshot(encode(drifted), ref)).toMatchObject({
      ok: false,
      issues: [{ path: 'counters.events' }, { path: 'event_counts' }],
    });
    const miscounted = { ...snapshot, event_counts: { ...snapshot.event_counts, pause: { user: 1 } } };
    expect(decodeSnapshot(encode(miscounted), ref)).toMatchObject({ ok: false, issues: [{ path: 'event_counts' }] });
    const ahead = { ...snapshot, final_response: { seq: snapshot.last_seq + 1, stream_seq: snapshot.last_stream_seq } };
    expect(decodeSnapshot(encode(ahead), ref)).toMatchObject({ ok: false, issues: [{ path: 'final_response' }] });
    expect(decodeSnapshot(encode({ ...snapshot, v: undefined }), ref)).toMatchObject({ ok: false });
  });

  it('reports a snapshot stored under another conversation', () => {
    expect(decodeSnapshot(encodeSnapshot(snapshot), { tenant: 'acme', conversation: 'c2' })).toMatchObject({
      ok: false,
    });
  });

  it('fails loudly on a snapshot of a newer version', () => {
    const newer = CURRENT_SNAPSHOT_VERSION + 1;
    expect(() => decodeSnapshot(encode({ ...snapshot, v: newer }), ref)).toThrow(StateError);
    expect(() => decodeSnapshot(encode({ ...snapshot, v: newer }), ref)).toThrow(new RegExp(`version ${newer}`));
  });

  it('reports a snapshot of an older version as outdated (to be rebuilt), whatever its fields', () => {
    const { pending_actions: _pending, event_counts: _counts, final_response: _final, ...version1 } = snapshot;
    expect(decodeSnapshot(encode({ ...version1, v: 1 }), ref)).toMatchObject({
      ok: false,
      reason: expect.stringContaining('outdated'),
      issues: [{ path: 'v' }],
    });
  });

  it('refuses to encode an invalid snapshot', () => {
    expect(() => encodeSnapshot({ ...snapshot, last_seq: -1 })).toThrow(StateError);
  });
});
