import { tailOf, type ConversationRef, type EventLog, type StoredCommit } from '@flotilla/log';
import { startNats, uniqueName } from '@flotilla/testing';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventDraft } from '@flotilla/events';
import { CURRENT_SNAPSHOT_VERSION } from './conversation-snapshot.js';
import { CommitOrderError, StateError } from './errors.js';
import { foldCommits, initialSnapshot } from './fold.js';
import { encodeSnapshot } from './snapshot-codec.js';
import { snapshotKey } from './snapshot-key.js';
import { SnapshotStore } from './snapshot-store.js';
import { commitsOf, EventFactory } from './test-support/events.js';
import { newRef, stateFixture, type StateFixture } from './test-support/fixtures.js';

let fixture: StateFixture;
beforeAll(async () => {
  fixture = await stateFixture();
});
afterAll(async () => {
  await fixture?.[Symbol.asyncDispose]();
});

async function appendAll(
  log: EventLog,
  ref: ConversationRef,
  groups: readonly (readonly EventDraft[])[],
): Promise<StoredCommit[]> {
  const commits: StoredCommit[] = [];
  let tail = await log.tail(ref);
  for (const drafts of groups) {
    const commit = await log.append(ref, drafts, { expected: tail });
    commits.push(commit);
    tail = tailOf(commit);
  }
  return commits;
}

function someConversation(ref: ConversationRef, size = 6): EventDraft[][] {
  const events = new EventFactory(ref);
  const groups: EventDraft[][] = [];
  for (let index = 0; index < size; index += 1) {
    const action = events.action(`call_${index}`);
    groups.push(
      [
        [events.userMessage(`ask ${index}`), events.stateChange({ status: 'running', title: `Task ${index}` })],
        [action, events.llmUsage({ prompt: 100 + index, cost: 0.01 * index })],
        [events.observation(action)],
        [events.agentMessage(), events.stateChange({ status: 'finished', tags: [`t${index}`] })],
      ][index % 4]!,
    );
  }
  return groups;
}

describe('SnapshotStore setup', () => {
  it('creates the bucket with history 1, and opening it again is a no-op', async () => {
    const status = await fixture.store.kv.status();
    expect(status.history).toBe(1);
    expect(status.replicas).toBe(1);
    const again = await fixture.openStore();
    expect(again.bucket).toBe(fixture.store.bucket);
    const ref = newRef();
    await fixture.store.advance(ref, commitsOf(ref, [[new EventFactory(ref).userMessage()]]));
    expect((await again.get(ref))?.snapshot.last_seq).toBe(1);
  });

  it('fails with a clear error when the server has no JetStream', async (context) => {
    await using server = await startNats({ jetstream: false, preferExternal: false });
    if (server.kind !== 'process') context.skip();
    const nc = await connect({ servers: server.url });
    try {
      const opening = SnapshotStore.open(nc, { bucket: uniqueName('nojs') });
      await expect(opening).rejects.toBeInstanceOf(StateError);
      await expect(opening).rejects.toMatchObject({
        code: 'jetstream_unavailable',
        isRetryable: false,
        message: expect.stringMatching(/-js/),
      });
    } finally {
      await nc.close();
    }
  });
});

describe('SnapshotStore get and advance', () => {
  it('returns undefined for a conversation without a snapshot', async () => {
    expect(await fixture.store.get(newRef())).toBeUndefined();
  });

  it('round-trips a snapshot through KV under <tenant>.<conversation>', async () => {
    const ref = newRef();
    const commits = await appendAll(fixture.log, ref, someConversation(ref));
    const result = await fixture.store.advance(ref, commits);
    const expected = foldCommits(initialSnapshot(ref), commits);
    expect(result).toMatchObject({ snapshot: expected, applied: commits.length, conflicts: 0 });
    expect(await fixture.store.get(ref)).toEqual({ snapshot: expected, revision: result.revision });
    const entry = await fixture.store.kv.get(`${ref.tenant}.${ref.conversation}`);
    expect(entry?.revision).toBe(result.revision);
    expect(entry?.json()).toEqual(expected);
  });

  it('skips commits already applied and writes nothing when nothing is new', async () => {
    const ref = newRef();
    const commits = await appendAll(fixture.log, ref, someConversation(ref));
    const first = await fixture.store.advance(ref, commits.slice(0, 4));
    const second = await fixture.store.advance(ref, commits);
    expect(second.applied).toBe(commits.length - 4);
    const third = await fixture.store.advance(ref, commits);
    expect(third).toMatchObject({ applied: 0, revision: second.revision, snapshot: second.snapshot });
    expect(second.revision).toBeGreaterThan(first.revision);
    expect(third.snapshot).toEqual(foldCommits(initialSnapshot(ref), commits));
  });

  it('refuses commits that leave a gap, and stores nothing', async () => {
    const ref = newRef();
    const commits = await appendAll(fixture.log, ref, someConversation(ref));
    await expect(fixture.store.advance(ref, commits.slice(2))).rejects.toBeInstanceOf(CommitOrderError);
    expect(await fixture.store.get(ref)).toBeUndefined();
    await fixture.store.advance(ref, commits.slice(0, 2));
    await expect(fixture.store.advance(ref, commits.slice(3))).rejects.toMatchObject({ code: 'gap' });
    expect((await fixture.store.get(ref))?.snapshot.commits).toBe(2);
  });

  it('refuses refs that cannot be keys', async () => {
    await expect(fixture.store.get({ tenant: 'acme', conversation: 'a.b' })).rejects.toMatchObject({
      code: 'invalid_ref',
    });
    expect(() => snapshotKey({ tenant: '*', conversation: 'c' })).toThrow(StateError);
  });

  it('never loses or double-counts a commit when advancers race with overlapping commit lists', async () => {
    const ref = newRef();
    const commits = await appendAll(fixture.log, ref, someConversation(ref, 24));
    const nc2 = await connect({ servers: fixture.server.url });
    try {
      const other = await SnapshotStore.open(nc2, { bucket: fixture.store.bucket });
      const stores = [fixture.store, other, fixture.store, other];
      // Each advancer walks the log in overlapping windows; each window starts no later than
      // where its own previous window ended, so no advancer can ever see a gap.
      const windows = [
        [
          [0, 6],
          [4, 12],
          [10, 24],
        ],
        [
          [0, 9],
          [2, 18],
          [15, 24],
        ],
        [
          [0, 3],
          [3, 15],
          [14, 20],
          [19, 24],
        ],
        [[0, 24]],
      ];
      const results = await Promise.all(
        windows.map(async (list, index) => {
          const outcomes = [];
          for (const [start, end] of list) outcomes.push(await stores[index]!.advance(ref, commits.slice(start, end)));
          return outcomes;
        }),
      );
      const applied = results.flat().reduce((sum, result) => sum + result.applied, 0);
      expect(applied).toBe(commits.length);
      const stored = await other.get(ref);
      expect(stored?.snapshot).toEqual(foldCommits(initialSnapshot(ref), commits));
    } finally {
      await nc2.close();
    }
  });

  it('keeps concurrent advancers exact under heavy contention', async () => {
    const ref = newRef();
    const commits = await appendAll(fixture.log, ref, someConversation(ref, 12));
    const results = await Promise.all(
      Array.from({ length: 8 }, async () => {
        let applied = 0;
        let conflicts = 0;
        for (let end = 1; end <= commits.length; end += 1) {
          const result = await fixture.store.advance(ref, commits.slice(0, end));
          applied += result.applied;
          conflicts += result.conflicts;
        }
        return { applied, conflicts };
      }),
    );
    expect(results.reduce((sum, result) => sum + result.applied, 0)).toBe(commits.length);
    expect((await fixture.store.get(ref))?.snapshot).toEqual(foldCommits(initialSnapshot(ref), commits));
  });
});

describe('SnapshotStore catchUp, rebuild and delete', () => {
  it('catches up from the log after the stored position, or from the start', async () => {
    const ref = newRef();
    const groups = someConversation(ref, 10);
    const early = await appendAll(fixture.log, ref, groups.slice(0, 4));
    await fixture.store.advance(ref, early.slice(0, 2));
    const late = await appendAll(fixture.log, ref, groups.slice(4));
    const caught = await fixture.store.catchUp(ref, fixture.log);
    const all = [...early, ...late];
    expect(caught).toMatchObject({ applied: 8, snapshot: foldCommits(initialSnapshot(ref), all) });
    expect((await fixture.store.get(ref))?.snapshot).toEqual(caught.snapshot);
    expect(await fixture.store.catchUp(ref, fixture.log)).toMatchObject({ applied: 0, revision: caught.revision });

    await fixture.store.delete(ref);
    const fresh = await fixture.store.catchUp(ref, fixture.log);
    expect(fresh).toMatchObject({ applied: 10, snapshot: caught.snapshot });
  });

  it('catches up in batches', async () => {
    const store = await fixture.openStore({ catchUpBatch: 3 });
    const ref = newRef();
    const commits = await appendAll(fixture.log, ref, someConversation(ref, 8));
    const caught = await store.catchUp(ref, fixture.log);
    expect(caught.applied).toBe(8);
    expect(caught.snapshot).toEqual(foldCommits(initialSnapshot(ref), commits));
  });

  it('leaves nothing for an empty log', async () => {
    const ref = newRef();
    expect(await fixture.store.catchUp(ref, fixture.log)).toMatchObject({
      applied: 0,
      revision: 0,
      snapshot: initialSnapshot(ref),
    });
    expect(await fixture.store.rebuild(ref, fixture.log)).toMatchObject({ applied: 0, revision: 0 });
    expect(await fixture.store.get(ref)).toBeUndefined();
  });

  it('says so when the snapshot is ahead of the log', async () => {
    const ref = newRef();
    const events = new EventFactory(ref);
    await fixture.store.advance(ref, commitsOf(ref, [[events.userMessage()], [events.agentMessage()]]));
    await appendAll(fixture.log, ref, [[events.userMessage()]]);
    await expect(fixture.store.catchUp(ref, fixture.log)).rejects.toMatchObject({
      code: 'snapshot_ahead',
      isRetryable: false,
    });
    const rebuilt = await fixture.store.rebuild(ref, fixture.log);
    expect(rebuilt.snapshot.last_seq).toBe(1);
  });

  it('reports a corrupt value, treats it as missing and rebuilds over it', async () => {
    const ref = newRef();
    const commits = await appendAll(fixture.log, ref, someConversation(ref));
    const key = snapshotKey(ref);
    const before = fixture.corrupt.length;
    await fixture.store.kv.put(key, 'not a snapshot');
    expect(await fixture.store.get(ref)).toBeUndefined();
    expect(fixture.corrupt.slice(before)).toEqual([
      expect.objectContaining({ key, reason: expect.stringContaining('not JSON') }),
    ]);

    const caught = await fixture.store.catchUp(ref, fixture.log);
    expect(caught.snapshot).toEqual(foldCommits(initialSnapshot(ref), commits));
    expect((await fixture.store.get(ref))?.snapshot).toEqual(caught.snapshot);
  });

  it('reports a value that is JSON but not a snapshot, and advance overwrites it', async () => {
    const ref = newRef();
    const commits = await appendAll(fixture.log, ref, someConversation(ref, 3));
    const key = snapshotKey(ref);
    const before = fixture.corrupt.length;
    await fixture.store.kv.put(key, JSON.stringify({ ...initialSnapshot(ref), last_seq: 5 }));
    const result = await fixture.store.advance(ref, commits);
    expect(fixture.corrupt.length).toBeGreaterThan(before);
    expect(fixture.corrupt.at(-1)).toMatchObject({
      key,
      issues: expect.arrayContaining([expect.objectContaining({ path: 'counters.events' })]),
    });
    expect(result.snapshot).toEqual(foldCommits(initialSnapshot(ref), commits));
  });

  it('fails loudly on a snapshot written by a newer version', async () => {
    const ref = newRef();
    await fixture.store.kv.put(
      snapshotKey(ref),
      JSON.stringify({ ...initialSnapshot(ref), v: CURRENT_SNAPSHOT_VERSION + 1 }),
    );
    await expect(fixture.store.get(ref)).rejects.toMatchObject({ code: 'unsupported_snapshot_version' });
  });

  it('rebuilds a snapshot of an older version from the log when it catches up (a version change rebuilds)', async () => {
    const ref = newRef();
    const commits = await appendAll(fixture.log, ref, someConversation(ref, 5));
    const expected = foldCommits(initialSnapshot(ref), commits);
    const {
      pending_actions: _pending,
      early_answers: _early,
      condensation_requested: _requested,
      event_counts: _counts,
      final_response: _final,
      ...fields
    } = foldCommits(initialSnapshot(ref), commits.slice(0, 3));
    await fixture.store.kv.put(snapshotKey(ref), JSON.stringify({ ...fields, v: 1 }));
    const before = fixture.corrupt.length;
    expect(await fixture.store.get(ref)).toBeUndefined();
    const caught = await fixture.store.catchUp(ref, fixture.log);
    const reports = fixture.corrupt.slice(before).map((report) => report.reason);
    expect(reports.length).toBeGreaterThan(0);
    expect(reports.every((reason) => reason.startsWith('outdated snapshot: version 1'))).toBe(true);
    expect(caught).toMatchObject({ snapshot: expected, applied: commits.length });
    expect((await fixture.store.get(ref))?.snapshot).toEqual(expected);
  });

  it('rebuilds a wrong but valid snapshot from the log, overwriting it', async () => {
    const ref = newRef();
    const commits = await appendAll(fixture.log, ref, someConversation(ref));
    const expected = foldCommits(initialSnapshot(ref), commits);
    await fixture.store.kv.put(snapshotKey(ref), encodeSnapshot({ ...expected, title: 'tampered', status: 'stuck' }));
    const rebuilt = await fixture.store.rebuild(ref, fixture.log);
    expect(rebuilt).toMatchObject({ snapshot: expected, applied: commits.length });
    expect(await fixture.store.get(ref)).toEqual({ snapshot: expected, revision: rebuilt.revision });
  });

  it('deletes a snapshot, and a later advance creates it again', async () => {
    const ref = newRef();
    const commits = await appendAll(fixture.log, ref, someConversation(ref, 4));
    await fixture.store.advance(ref, commits);
    await fixture.store.delete(ref);
    expect(await fixture.store.get(ref)).toBeUndefined();
    await fixture.store.delete(ref);
    const again = await fixture.store.advance(ref, commits);
    expect(again.applied).toBe(4);
    expect((await fixture.store.get(ref))?.snapshot).toEqual(foldCommits(initialSnapshot(ref), commits));
  });

  it('never goes wrong when rebuild races with advancers', async () => {
    const ref = newRef();
    const commits = await appendAll(fixture.log, ref, someConversation(ref, 16));
    await Promise.all([
      fixture.store.advance(ref, commits.slice(0, 8)).then(() => fixture.store.advance(ref, commits)),
      fixture.store.rebuild(ref, fixture.log),
      fixture.store.rebuild(ref, fixture.log),
    ]);
    expect((await fixture.store.get(ref))?.snapshot).toEqual(foldCommits(initialSnapshot(ref), commits));
  });
});

describe('SnapshotStore current (the state at the tail, for commands)', () => {
  it('folds the stored snapshot and only the commits after it, writing nothing', async () => {
    const ref = newRef();
    const commits = await appendAll(fixture.log, ref, someConversation(ref, 7));
    const stored = await fixture.store.advance(ref, commits.slice(0, 5));
    const current = await fixture.store.current(ref, fixture.log);
    expect(current.snapshot).toEqual(foldCommits(initialSnapshot(ref), commits));
    expect(current.tail).toEqual(tailOf(commits.at(-1)!));
    expect(current.commits.map((commit) => commit.streamSeq)).toEqual(
      commits.slice(5).map((commit) => commit.streamSeq),
    );
    expect(current.stored).toEqual({ snapshot: stored.snapshot, revision: stored.revision });
    expect((await fixture.store.get(ref))?.revision).toBe(stored.revision);
    const written = await fixture.store.advanceKnown(ref, current.stored, current.commits);
    expect(written?.snapshot).toEqual(current.snapshot);
  });

  it('reads nothing after a snapshot at the tail, and folds the whole log when none is stored', async () => {
    const ref = newRef();
    const commits = await appendAll(fixture.log, ref, someConversation(ref, 4));
    const whole = await fixture.store.current(ref, fixture.log);
    expect(whole).toMatchObject({ snapshot: foldCommits(initialSnapshot(ref), commits), stored: { revision: 0 } });
    expect(whole.commits).toHaveLength(4);
    await fixture.store.advance(ref, commits);
    expect((await fixture.store.current(ref, fixture.log)).commits).toEqual([]);
  });

  it('answers the initial snapshot and an empty tail for an empty log', async () => {
    const ref = newRef();
    expect(await fixture.store.current(ref, fixture.log)).toMatchObject({
      snapshot: initialSnapshot(ref),
      tail: { streamSeq: 0, lastSeq: 0 },
      commits: [],
    });
  });

  it('folds the log whole when the stored snapshot belongs to another log (purged and written again)', async () => {
    const ref = newRef();
    const old = await appendAll(fixture.log, ref, someConversation(ref, 6));
    await fixture.store.advance(ref, old);
    await fixture.log.purge(ref);
    const shorter = await appendAll(fixture.log, ref, someConversation(ref, 3));
    const current = await fixture.store.current(ref, fixture.log);
    expect(current.snapshot).toEqual(foldCommits(initialSnapshot(ref), shorter));
    const longer = [...shorter, ...(await appendAll(fixture.log, ref, someConversation(ref, 5)))];
    expect((await fixture.store.current(ref, fixture.log)).snapshot).toEqual(foldCommits(initialSnapshot(ref), longer));
  });
});
