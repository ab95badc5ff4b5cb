import { positionOfEventId } from '@flotilla/events';
import { describe, expect, it } from 'vitest';
import { conversationFixture, realRunCommits } from './test-support/conversation-fixture.js';

describe('events a conversation writes', () => {
  it('carry positional ids naming their commit, and references to events of the same commit follow them', async () => {
    await using fixture = await conversationFixture();
    let checked = 0;
    for (const run of await realRunCommits(fixture)) {
      const ids = new Set(run.flat().map((event) => event.id));
      for (const commit of run) {
        for (const event of commit) {
          expect(positionOfEventId(event.id), `${event.type} #${event.seq}`).toBe(commit[0]!.seq);
          const references = [
            ...(event.parent === undefined ? [] : [event.parent]),
            ...('action_id' in event && event.action_id !== undefined ? [event.action_id] : []),
            ...('action_ids' in event ? event.action_ids : []),
          ];
          for (const reference of references)
            expect(ids.has(reference), `${event.type} #${event.seq} refers to ${reference}`).toBe(true);
          checked += 1;
        }
      }
    }
    expect(checked).toBeGreaterThan(40);
  });
});
