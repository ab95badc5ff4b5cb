import { tailOf, type ConversationRef, type StoredCommit, type Tail } from '@flotilla/log';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConversationSnapshot } from './conversation-snapshot.js';
import { conversationState } from './conversation-state.js';
import { foldCommits, initialSnapshot } from './fold.js';
import { conversationScript, draftsFor, splitIntoCommits } from './test-support/arbitraries.js';
import { newRef, stateFixture, type StateFixture } from './test-support/fixtures.js';

let fixture: StateFixture;
beforeAll(async () => {
  fixture = await stateFixture();
});
afterAll(async () => {
  await fixture?.[Symbol.asyncDispose]();
});

/** Appends a generated conversation to the log, commit by commit, telling `onCommit` of each. */
async function appendScript(
  ref: ConversationRef,
  happenings: Parameters<typeof draftsFor>[1],
  commitSizes: Parameters<typeof splitIntoCommits>[1],
  onCommit?: (commit: StoredCommit) => Promise<void>,
): Promise<{ commits: StoredCommit[]; tail: Tail }> {
  const { log } = fixture;
  const commits: StoredCommit[] = [];
  let tail: Tail = await log.tail(ref);
  for (const drafts of splitIntoCommits(draftsFor(ref, happenings), commitSizes)) {
    const commit = await log.append(ref, drafts, { expected: tail });
    tail = tailOf(commit);
    commits.push(commit);
    await onCommit?.(commit);
  }
  return { commits, tail };
}

describe('snapshot rebuild (invariant 1: the log is the source of truth)', () => {
  it('an incrementally maintained snapshot equals a rebuild from the log and a pure fold', async () => {
    await fc.assert(
      fc.asyncProperty(conversationScript, async ({ happenings, commitSizes }) => {
        const { log, store } = fixture;
        const ref = newRef();
        const { commits, tail } = await appendScript(ref, happenings, commitSizes, async (commit) => {
          const advanced = await store.advance(ref, [commit]);
          expect(advanced.applied).toBe(1);
        });
        const incremental = await store.get(ref);
        expect(incremental).toBeDefined();

        await store.delete(ref);
        expect(await store.get(ref)).toBeUndefined();
        const rebuilt = await store.rebuild(ref, log);
        const stored = await store.get(ref);

        const folded = foldCommits(initialSnapshot(ref), commits);
        expect(rebuilt.snapshot).toEqual(incremental!.snapshot);
        expect(stored?.snapshot).toEqual(incremental!.snapshot);
        expect(folded).toEqual(incremental!.snapshot);
        expect(ConversationSnapshot.parse(folded)).toEqual(folded);
        expect(folded.counters.events).toBe(tail.lastSeq);
        expect(folded.commits).toBe(commits.length);
      }),
      { numRuns: 25 },
    );
  });

  it('the state at the tail from any stored position (snapshot + the commits after it) equals a fold of the whole log', async () => {
    await fc.assert(
      fc.asyncProperty(conversationScript, fc.nat(), async ({ happenings, commitSizes }, cut) => {
        const { log, store } = fixture;
        const ref = newRef();
        const { commits } = await appendScript(ref, happenings, commitSizes);
        const stored = cut % (commits.length + 1);
        if (stored > 0) await store.advance(ref, commits.slice(0, stored));
        const current = await store.current(ref, log);
        const whole = foldCommits(initialSnapshot(ref), commits);
        expect(current.snapshot).toEqual(whole);
        expect(current.commits).toHaveLength(commits.length - stored);
        const { status, pending_actions, early_answers, condensation_requested } = whole;
        expect(conversationState(commits.flatMap((commit) => commit.events))).toEqual({
          status,
          pending_actions,
          early_answers,
          condensation_requested,
        });
      }),
      { numRuns: 25 },
    );
  });
});
