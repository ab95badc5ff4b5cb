import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { draftEvent, type EventDraft } from '@flotilla/events';
import { EMPTY_TAIL, EventLog, type ConversationRef, type StoredCommit, type Tail } from '@flotilla/log';
import { startNats, uniqueName, type NatsTestServer } from '@flotilla/testing';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CheckpointStore,
  type CheckpointParseResult,
  type CheckpointPosition,
  type CheckpointPut,
} from './checkpoint-store.js';
import { ConversationCache } from './conversation-cache.js';
import { loadConversation } from './conversation-load.js';
import { requestPurge, servePurges } from './conversation-purge.js';

/** A stand-in for what a real checkpoint holds: the number of events folded. */
type Counted = { readonly events: number };
const parse = (value: unknown): CheckpointParseResult<Counted> =>
  typeof value === 'object' && value !== null && typeof (value as Counted).events === 'number'
    ? { ok: true, checkpoint: value as Counted }
    : { ok: false, reason: 'not a count' };

let server: NatsTestServer;
let nc: NatsConnection;
let log: EventLog;
let store: CheckpointStore<Counted>;
const corrupt: string[] = [];

beforeAll(async () => {
  server = await startNats();
  nc = await connect({ servers: server.url });
  const name = uniqueName('CP');
  log = await EventLog.open(nc, { streamName: name, subjectPrefix: `t.${name.toLowerCase()}` });
  store = await CheckpointStore.open(nc, {
    parse,
    bucket: uniqueName('checkpoints'),
    onCorrupt: (report) => corrupt.push(report.reason),
  });
});

afterAll(async () => {
  await nc.close();
  await server[Symbol.asyncDispose]();
});

const message = (ref: ConversationRef, text: string): EventDraft =>
  draftEvent({ ...ref, source: 'user' }, 'message', { role: 'user', content: [{ type: 'text', text }] });

/** A conversation of `count` commits of two events each. */
async function conversation(count: number): Promise<{ ref: ConversationRef; commits: StoredCommit[]; tail: Tail }> {
  const ref = { tenant: 'acme', conversation: uniqueName('c') };
  const commits: StoredCommit[] = [];
  let tail: Tail = EMPTY_TAIL;
  for (let index = 0; index < count; index += 1) {
    const commit = await log.append(ref, [message(ref, `a${index}`), message(ref, `b${index}`)], { expected: tail });
    commits.push(commit);
    tail = { streamSeq: commit.streamSeq, lastSeq: commit.lastSeq };
  }
  return { ref, commits, tail };
}

function revisionOf(put: CheckpointPut): number {
  if (!put.ok) throw new Error(`not stored: ${put.reason}`);
  return put.revision;
}

/** A checkpoint after commit `at`, whose reader reads from the second event of commit `from` on. */
function position(commits: readonly StoredCommit[], at: number, from: number): CheckpointPosition {
  const commit = commits[at]!;
  return {
    streamSeq: commit.streamSeq,
    commit: commit.id,
    lastSeq: commit.lastSeq,
    origin: commits[0]!.streamSeq,
    readFrom: { streamSeq: commits[from]!.streamSeq, seq: commits[from]!.firstSeq + 1 },
  };
}

describe('loading a conversation from its checkpoint', () => {
  it('reads the log from a little before the checkpoint, and the whole log without one', async () => {
    const { ref, commits, tail } = await conversation(30);
    const whole = await loadConversation(log, ref, tail.streamSeq, { store });
    expect(whole.start).toBeUndefined();
    expect(whole.events.map((event) => event.seq)).toEqual(Array.from({ length: 60 }, (_, index) => index + 1));
    expect(whole.tail).toEqual(tail);

    expect(await store.put(ref, position(commits, 24, 20), { events: 50 }, 0)).toMatchObject({ ok: true });
    const loaded = await loadConversation(log, ref, tail.streamSeq, { store });
    expect(loaded.start?.state).toEqual({ events: 50 });
    // from the second event of commit 20 (seq 42) to the end; 9 of them (42–50) are before the checkpoint
    expect(loaded.events.map((event) => event.seq)).toEqual(Array.from({ length: 19 }, (_, index) => index + 42));
    expect(loaded.start?.folded).toBe(9);
    expect(loaded.commits.map((commit) => commit.streamSeq)).toEqual(
      commits.slice(20).map((commit) => commit.streamSeq),
    );
    expect(loaded.tail).toEqual(tail);
    // up to the checkpoint itself
    const atCheckpoint = await loadConversation(log, ref, commits[24]!.streamSeq, { store });
    expect(atCheckpoint.events.at(-1)?.seq).toBe(50);
    expect(atCheckpoint.start?.folded).toBe(9);
  });

  it('uses a checkpoint only where it fits the log: its commit, its position, the log it was taken from', async () => {
    const { ref, commits, tail } = await conversation(6);
    const reasons: string[] = [];
    const reading = { store, onUnused: (reason: string) => reasons.push(reason) };
    const cases: [string, CheckpointPosition][] = [
      ['another commit', { ...position(commits, 4, 2), commit: 'not-the-commit' }],
      ['another place', { ...position(commits, 4, 2), readFrom: { streamSeq: commits[2]!.streamSeq, seq: 1 } }],
      ['another log', { ...position(commits, 4, 2), origin: commits[0]!.streamSeq + 1 }],
    ];
    let revision = 0;
    for (const [name, wrong] of cases) {
      revision = revisionOf(await store.put(ref, wrong, { events: 10 }, revision));
      const loaded = await loadConversation(log, ref, tail.streamSeq, reading);
      expect(loaded.start, name).toBeUndefined();
      expect(loaded.events, name).toHaveLength(12);
    }
    expect(reasons).toHaveLength(3);
    // a reader that does not accept it, and a load that ends before it
    revision = revisionOf(await store.put(ref, position(commits, 4, 2), { events: 10 }, revision));
    expect((await loadConversation(log, ref, tail.streamSeq, { store, accept: () => false })).start).toBeUndefined();
    expect((await loadConversation(log, ref, commits[3]!.streamSeq, { store })).events).toHaveLength(8);
    expect((await loadConversation(log, ref, tail.streamSeq, { store })).start?.state).toEqual({ events: 10 });
  });

  it('ignores a stored value that is not a checkpoint, refuses a record larger than the server takes, and writes with compare-and-set', async () => {
    const { ref, commits } = await conversation(3);
    const key = `${ref.tenant}.${ref.conversation}`;
    const reported = corrupt.length;
    await store.kv.put(key, 'not json');
    expect(await store.get(ref)).toBeUndefined();
    await store.kv.put(key, gzipSync('not json'));
    expect(await store.get(ref)).toBeUndefined();
    await store.kv.put(key, gzipSync(JSON.stringify({ v: 99 })));
    expect(await store.get(ref)).toBeUndefined();
    expect(corrupt.length - reported).toBe(3);
    // a plain-JSON record of the format before is ignored without a report (it is rewritten)
    await store.kv.put(key, JSON.stringify({ v: 1, tenant: ref.tenant, conversation: ref.conversation }));
    expect(await store.get(ref)).toBeUndefined();
    expect(corrupt.length - reported).toBe(3);
    await store.delete(ref);
    // records are gzipped: a repetitive state (as a view's JSON is) takes a fraction of its size
    const repetitive = { events: 6, padding: 'x'.repeat(store.maxBytes) } as Counted;
    const stored = revisionOf(await store.put(ref, position(commits, 2, 1), repetitive, 0));
    expect((await store.kv.get(key))!.value.length).toBeLessThan(store.maxBytes / 100);
    expect((await store.get(ref))?.state).toEqual(repetitive);
    await store.delete(ref);
    expect(stored).toBeGreaterThan(0);
    expect(
      await store.put(
        ref,
        position(commits, 2, 1),
        { events: 6, padding: randomBytes(store.maxBytes).toString('base64') } as Counted,
        0,
      ),
    ).toMatchObject({ ok: false, reason: 'too_large' });
    const first = revisionOf(await store.put(ref, position(commits, 1, 0), { events: 4 }, 0));
    expect(await store.put(ref, position(commits, 2, 1), { events: 6 }, 0)).toMatchObject({
      ok: false,
      reason: 'conflict',
    });
    expect(revisionOf(await store.put(ref, position(commits, 2, 1), { events: 6 }, first))).toBeGreaterThan(first);
    expect((await store.get(ref))?.state).toEqual({ events: 6 });
  });

  it('a cache cold-loads from the checkpoint and catches up from there as usual', async () => {
    const { ref, commits, tail } = await conversation(10);
    await store.put(ref, position(commits, 7, 6), { events: 16 }, 0);
    const loads: string[] = [];
    const cache = new ConversationCache<Counted>(log, 10, 1_000, 8, {
      checkpoints: { store },
      onColdLoad: (source, events) => loads.push(`${source} ${events}`),
    });
    const cold = await cache.load(ref);
    expect(loads).toEqual(['checkpoint 7']);
    expect(cold.start?.state).toEqual({ events: 16 });
    expect(cold.events[0]?.seq).toBe(14);
    expect(cold.tail).toEqual(tail);
    const next = await log.append(ref, [message(ref, 'more')], { expected: tail });
    const warm = await cache.load(ref);
    expect(warm.events.at(-1)?.seq).toBe(next.lastSeq);
    expect(warm.start).toBe(cold.start);
    // a cache without checkpoints reads the whole log
    expect((await new ConversationCache(log).load(ref)).events).toHaveLength(21);
    // and so does one delivered a commit whose headers say the conversation is short
    const stored = (await log.jsm.direct.getMessage(log.streamName, { seq: next.streamSeq }))!;
    const delivered = { subject: stored.subject, seq: stored.seq, data: stored.data, headers: stored.header };
    const short = new ConversationCache<Counted>(log, 10, 1_000, 8, { checkpoints: { store }, checkpointsFrom: 22 });
    expect((await short.load(ref, next.streamSeq, delivered)).start).toBeUndefined();
    const long = new ConversationCache<Counted>(log, 10, 1_000, 8, { checkpoints: { store }, checkpointsFrom: 21 });
    expect((await long.load(ref, next.streamSeq, delivered)).start).toBeDefined();
  });

  it('a deleted conversation keeps no checkpoint', async () => {
    const { ref, commits } = await conversation(2);
    await store.put(ref, position(commits, 1, 0), { events: 4 }, 0);
    const purges = servePurges(nc, log, pino({ level: 'silent' }), { alsoRemove: (removed) => store.delete(removed) });
    try {
      await requestPurge(nc, ref);
      expect(await store.get(ref)).toBeUndefined();
      expect(await log.firstCommitSeq(ref)).toBeUndefined();
    } finally {
      purges.unsubscribe();
    }
  });
});
