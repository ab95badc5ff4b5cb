import { describe, expect, it } from 'vitest';
import { draftEvent, type DraftContext } from './draft.js';
import { EventId } from './ids.js';
import {
  MAX_POSITION,
  positionalId,
  positionalIdIssues,
  positionOfEventId,
  withPositionalIds,
} from './positional-ids.js';

const context: DraftContext = {
  tenant: 'acme',
  conversation: 'c1',
  source: 'agent',
  now: () => new Date('2026-03-02T09:15:04.871Z'),
};
const V4 = '6f1c2b3a-9d8e-4f70-a1b2-c3d4e5f60718';

describe('positional event ids', () => {
  it('are version 8 UUIDs holding the first seq of their commit and the random bits of the draft id', () => {
    const id = positionalId(V4, 7);
    expect(id).toBe('00000000-0007-8f70-a1b2-c3d4e5f60718');
    expect(EventId.safeParse(id).success).toBe(true);
    expect(positionOfEventId(id)).toBe(7);
    expect(positionalId(id, 123_456_789)).toBe('0000075b-cd15-8f70-a1b2-c3d4e5f60718');
    expect(positionOfEventId(positionalId(V4, MAX_POSITION))).toBe(MAX_POSITION);
  });

  it('keep ids that are not UUIDs, and ids for positions out of range, as they are', () => {
    for (const id of ['a1', 'evt:1.2', 'call_1', '6f1c2b3a-9d8e-4f70-a1b2']) expect(positionalId(id, 3)).toBe(id);
    expect(positionalId(V4, 0)).toBe(V4);
    expect(positionalId(V4, MAX_POSITION + 1)).toBe(V4);
  });

  it('say nothing of other ids: random UUIDs, a version 8 UUID at position 0, other strings', () => {
    for (const id of [
      V4,
      '00000000-0000-8f70-a1b2-c3d4e5f60718',
      'a1',
      '00000000-0007-8f70-a1b2-c3d4e5f6071',
      '00000000-0007-8F70-A1B2-C3D4E5F60718',
    ]) {
      expect(positionOfEventId(id)).toBeUndefined();
    }
  });

  it('are given to one commit’s drafts, with the references among them following, and nothing else changed', () => {
    const action = draftEvent(context, 'action', {
      tool_call_id: 'call_1',
      tool_name: 'x',
      arguments: '{',
      input: null,
      thought: [],
      response_id: 'r',
      security_risk: 'low',
    });
    const error = draftEvent({ ...context, source: 'environment', parent: action.id }, 'agent_error', {
      tool_call_id: 'call_1',
      tool_name: 'x',
      action_id: action.id,
      error: 'bad JSON',
    });
    const started = draftEvent(context, 'execution_started', {
      action_ids: [action.id, 'earlier-action'],
      runner: 'r1',
    });
    const condensation = draftEvent(context, 'condensation', { forgotten_event_ids: ['old', action.id] });
    const explicit = draftEvent(context, 'pause', { id: 'chosen' });
    const placed = withPositionalIds([action, error, started, condensation, explicit], 12);
    const ids = placed.map((draft) => draft.id);
    expect(ids.slice(0, 4).map(positionOfEventId)).toEqual([12, 12, 12, 12]);
    expect(ids[4]).toBe('chosen');
    expect(placed[1]).toMatchObject({ parent: ids[0], action_id: ids[0] });
    expect(placed[2]).toMatchObject({ action_ids: [ids[0], 'earlier-action'] });
    expect(placed[3]).toMatchObject({ forgotten_event_ids: ['old', ids[0]] });
    expect(
      placed.map(({ id: _id, ...rest }) => ({
        ...rest,
        parent: undefined,
        action_id: undefined,
        action_ids: undefined,
        forgotten_event_ids: undefined,
      })),
    ).toEqual(
      [action, error, started, condensation, explicit].map(({ id: _id, ...rest }) => ({
        ...rest,
        parent: undefined,
        action_id: undefined,
        action_ids: undefined,
        forgotten_event_ids: undefined,
      })),
    );
    // the drafts given are not changed, and placing them again at another seq moves every id
    expect(action.id).not.toBe(ids[0]);
    expect(withPositionalIds(placed, 20).map((draft) => positionOfEventId(draft.id))).toEqual([
      20,
      20,
      20,
      20,
      undefined,
    ]);
    expect(withPositionalIds([action], 12)[0]!.id).toBe(ids[0]);
  });

  it('are refused anywhere but in the commit they name', () => {
    const [one, two] = [positionalId(V4, 5), positionalId('11111111-2222-4333-8444-555555555555', 6)];
    expect(positionalIdIssues([{ id: one }, { id: 'plain' }], 5)).toEqual([]);
    expect(positionalIdIssues([{ id: one }, { id: two }], 5)).toEqual([
      { path: 'events.1.id', message: expect.stringContaining('commit at seq 6, but this commit starts at seq 5') },
    ]);
  });
});
