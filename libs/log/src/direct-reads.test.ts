import { describe, expect, it } from 'vitest';
import { DIRECT_BATCH_SIZE, directBatch, readSubjectRange } from './direct-batch.js';
import { EMPTY_TAIL, type Tail } from './stored-commit.js';
import { logFixture, newRef, userMessage } from './test-support/fixtures.js';
import type { EventLog } from './event-log.js';
import type { ConversationRef } from './conversation-ref.js';

/** Appends `commits` commits of one or two events, interleaved with another conversation's, and returns the tail. */
async function writeLong(log: EventLog, ref: ConversationRef, other: ConversationRef, commits: number): Promise<Tail> {
  let tail = EMPTY_TAIL;
  let otherTail = EMPTY_TAIL;
  for (let index = 0; index < commits; index += 1) {
    const drafts =
      index % 3 === 0
        ? [userMessage(ref, `m${index}a`), userMessage(ref, `m${index}b`)]
        : [userMessage(ref, `m${index}`)];
    const commit = await log.append(ref, drafts, { expected: tail });
    tail = { streamSeq: commit.streamSeq, lastSeq: commit.lastSeq };
    if (index % 4 === 0) {
      const noise = await log.append(other, [userMessage(other, `n${index}`)], { expected: otherTail });
      otherTail = { streamSeq: noise.streamSeq, lastSeq: noise.lastSeq };
    }
  }
  return tail;
}

async function consumerCount(log: EventLog): Promise<number> {
  const info = await log.jsm.streams.info(log.streamName);
  const listed = await log.jsm.consumers.list(log.streamName).next();
  expect(listed).toHaveLength(info.state.consumer_count);
  return info.state.consumer_count;
}

describe('reads create no consumer', () => {
  it('reads a conversation of several batches whole, from any position, and the stream never holds a consumer', async () => {
    await using fixture = await logFixture();
    const { log, nc } = fixture;
    const ref = newRef();
    const other = newRef();
    const commits = DIRECT_BATCH_SIZE * 2 + 300;
    const tail = await writeLong(log, ref, other, commits);
    const subscriptions = (): number =>
      (nc as unknown as { protocol: { subscriptions: { size(): number } } }).protocol.subscriptions.size();
    const subscribedBefore = subscriptions();
    const seen: number[] = [];
    const counted = setInterval(
      () =>
        void consumerCount(log).then(
          (count) => seen.push(count),
          () => undefined,
        ),
      5,
    );
    try {
      const whole = await log.readEvents(ref);
      expect(whole.tail).toEqual(tail);
      expect(whole.events.map((event) => event.seq)).toEqual(
        Array.from({ length: tail.lastSeq }, (_, index) => index + 1),
      );

      const read: number[] = [];
      for await (const commit of log.read(ref, { afterSeq: 100 })) read.push(commit.firstSeq);
      expect(read.length).toBeGreaterThan(DIRECT_BATCH_SIZE);
      expect(read[0]).toBeLessThanOrEqual(101);

      // a catch-up between two known stream positions, the way a cache reads: past one batch
      let visited = 0;
      const middle = await log.locate(ref, 700);
      await log.forEachCommit(
        ref,
        { afterSeq: 0, afterStreamSeq: middle! - 1, untilStreamSeq: tail.streamSeq, expectedMessages: 3 },
        () => void (visited += 1),
      );
      expect(visited).toBeGreaterThan(DIRECT_BATCH_SIZE);

      // a read told to stop early stops there
      let stoppedAt = 0;
      await log.forEachCommit(ref, {}, (commit) => {
        stoppedAt = commit.lastSeq;
        return commit.lastSeq < 50;
      });
      expect(stoppedAt).toBeGreaterThanOrEqual(50);
      expect(stoppedAt).toBeLessThan(53);

      // many readers at once
      const all = await Promise.all(Array.from({ length: 20 }, () => log.readEvents(ref, { afterSeq: 1_000 })));
      for (const result of all) expect(result.events).toHaveLength(tail.lastSeq - 1_000);
    } finally {
      clearInterval(counted);
    }
    expect(seen.length).toBeGreaterThan(0);
    expect(Math.max(...seen)).toBe(0);
    expect(await consumerCount(log)).toBe(0);
    // the reads leave no subscription behind (the connection's own: its request and publish inboxes)
    expect(subscriptions()).toBe(subscribedBefore);
  });

  it('answers a batch by count, says whether more is held, and reads only up to the range asked', async () => {
    await using fixture = await logFixture();
    const { log, nc } = fixture;
    const ref = newRef();
    const other = newRef();
    const tail = await writeLong(log, ref, other, 40);
    const subject = log.filter(ref);
    const first = await directBatch(nc, { stream: log.streamName, subject, from: 1, batch: 10 });
    expect(first.messages).toHaveLength(10);
    expect(first.more).toBe(true);
    expect(first.messages.every((message) => message.subject.startsWith(subject.slice(0, -1)))).toBe(true);
    const rest = await directBatch(nc, {
      stream: log.streamName,
      subject,
      from: first.messages.at(-1)!.seq + 1,
      batch: 100,
    });
    expect(rest.messages).toHaveLength(30);
    expect(rest.more).toBe(false);
    expect(rest.messages.at(-1)!.seq).toBe(tail.streamSeq);
    const none = await directBatch(nc, { stream: log.streamName, subject, from: tail.streamSeq + 1, batch: 100 });
    expect(none).toEqual({ messages: [], more: false });

    const tenth = first.messages[9]!.seq;
    const range: number[] = [];
    for await (const message of readSubjectRange(nc, { stream: log.streamName, subject, from: 1, until: tenth }))
      range.push(message.seq);
    expect(range).toEqual(first.messages.map((message) => message.seq));

    // past what the answering server holds, the leader is asked for the rest (here: nothing more)
    const asked: number[] = [];
    const leaderGet = async (seq: number): Promise<null> => {
      asked.push(seq);
      return null;
    };
    let count = 0;
    for await (const _message of readSubjectRange(nc, {
      stream: log.streamName,
      subject,
      from: 1,
      until: tail.streamSeq + 50,
      leaderGet,
    }))
      count += 1;
    expect(count).toBe(40);
    expect(asked).toEqual([tail.streamSeq + 1]);

    await expect(
      directBatch(nc, { stream: 'NO_SUCH_STREAM', subject, from: 1, batch: 5, idleTimeoutMs: 2_000 }),
    ).rejects.toMatchObject({ code: 'transient' });
    expect(await consumerCount(log)).toBe(0);
  });
});
