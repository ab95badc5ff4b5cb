import { CommitHeader, CURRENT_PROTOCOL_VERSION, draftEvent, type EventDraft } from '@flotilla/events';
import { connect, headers } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { describe, expect, it } from 'vitest';
import { ConflictError, LogError } from './errors.js';
import { EMPTY_TAIL } from './stored-commit.js';
import { logFixture, newRef, userMessage } from './test-support/fixtures.js';

describe('EventLog append and read', () => {
  it('appends commits with contiguous seqs and reads them back', async () => {
    await using fixture = await logFixture();
    const { log } = fixture;
    const ref = newRef();
    expect(await log.tail(ref)).toEqual(EMPTY_TAIL);
    const first = await log.append(ref, [userMessage(ref, 'hello')], { expected: EMPTY_TAIL });
    expect(first).toMatchObject({ firstSeq: 1, lastSeq: 1 });
    const second = await log.append(ref, [userMessage(ref, 'a'), userMessage(ref, 'b')], {
      expected: { streamSeq: first.streamSeq, lastSeq: 1 },
    });
    expect(second).toMatchObject({ firstSeq: 2, lastSeq: 3 });
    expect(await log.tail(ref)).toEqual({ streamSeq: second.streamSeq, lastSeq: 3 });
    const { events } = await log.readEvents(ref);
    expect(events.map((event) => event.seq)).toEqual([1, 2, 3]);
    expect(events.map((event) => (event.type === 'message' ? event.content[0] : undefined))).toEqual([
      { type: 'text', text: 'hello' },
      { type: 'text', text: 'a' },
      { type: 'text', text: 'b' },
    ]);
    const raw = await log.jsm.direct.getMessage(log.streamName, { last_by_subj: log.filter(ref) });
    expect(raw?.header.get(CommitHeader.EventTypes)).toBe('message');
    expect(raw?.header.get(CommitHeader.FirstSeq)).toBe('2');
    expect(raw?.header.get(CommitHeader.EventCount)).toBe('2');
  });

  it('sends what beforePublish publishes right ahead of the commit, once per append', async () => {
    await using fixture = await logFixture();
    const { log, nc, server } = fixture;
    const ref = newRef();
    const watcher = await connect({ servers: server.url });
    try {
      const seen: string[] = [];
      const subscription = watcher.subscribe(`${log.subjectPrefix}.>`, {
        callback: (_error, msg) => void seen.push(msg.subject),
      });
      const before = watcher.subscribe('watch.before', { callback: (_error, msg) => void seen.push(msg.subject) });
      await watcher.flush();
      let calls = 0;
      await log.append(ref, [userMessage(ref, 'hello')], {
        expected: EMPTY_TAIL,
        beforePublish: () => {
          calls += 1;
          nc.publish('watch.before', 'the last deltas');
        },
      });
      await watcher.flush();
      expect(calls).toBe(1);
      expect(seen).toEqual(['watch.before', log.subject(ref)]);
      subscription.unsubscribe();
      before.unsubscribe();
    } finally {
      await watcher.close();
    }
  });

  it('refuses an append on a stale tail with a ConflictError', async () => {
    await using fixture = await logFixture();
    const { log } = fixture;
    const ref = newRef();
    await log.append(ref, [userMessage(ref, 'one')], { expected: EMPTY_TAIL });
    const stale = log.append(ref, [userMessage(ref, 'two')], { expected: EMPTY_TAIL });
    await expect(stale).rejects.toBeInstanceOf(ConflictError);
    await expect(stale).rejects.toMatchObject({ code: 'conflict', isRetryable: false });
    expect((await log.readEvents(ref)).events).toHaveLength(1);
  });

  it('keeps conversations apart', async () => {
    await using fixture = await logFixture();
    const { log } = fixture;
    const a = newRef();
    const b = newRef();
    await log.append(a, [userMessage(a, 'for a')], { expected: EMPTY_TAIL });
    await log.append(b, [userMessage(b, 'for b')], { expected: EMPTY_TAIL });
    expect((await log.readEvents(a)).events).toHaveLength(1);
    expect((await log.readEvents(b)).events[0]).toMatchObject({ conversation: b.conversation, seq: 1 });
  });

  it('reads from any position and locates the commit holding a seq', async () => {
    await using fixture = await logFixture();
    const { log } = fixture;
    const ref = newRef();
    let tail = EMPTY_TAIL;
    for (let index = 0; index < 40; index += 1) {
      const drafts = Array.from({ length: (index % 3) + 1 }, (_, n) => userMessage(ref, `${index}.${n}`));
      const commit = await log.append(ref, drafts, { expected: tail });
      tail = { streamSeq: commit.streamSeq, lastSeq: commit.lastSeq };
      // interleave another conversation so stream sequences have gaps
      const other = newRef();
      await log.append(other, [userMessage(other, 'noise')], { expected: EMPTY_TAIL });
    }
    for (const after of [0, 1, 2, 17, tail.lastSeq - 1, tail.lastSeq]) {
      const { events } = await log.readEvents(ref, { afterSeq: after });
      expect(events.map((event) => event.seq)).toEqual(
        Array.from({ length: tail.lastSeq - after }, (_, n) => after + 1 + n),
      );
    }
    expect(await log.locate(ref, tail.lastSeq + 1)).toBeUndefined();
    expect(await log.locate(ref, tail.lastSeq)).toBe(tail.streamSeq);
  });

  it('hands a read to a visitor as read yields it, stops where the visitor says, and knows where the log starts', async () => {
    await using fixture = await logFixture();
    const { log } = fixture;
    const ref = newRef();
    expect(await log.firstCommitSeq(ref)).toBeUndefined();
    let tail = EMPTY_TAIL;
    for (let index = 0; index < 30; index += 1) {
      const commit = await log.append(ref, [userMessage(ref, `${index}`)], { expected: tail });
      tail = { streamSeq: commit.streamSeq, lastSeq: commit.lastSeq };
    }
    const yielded: number[] = [];
    for await (const commit of log.read(ref, { afterSeq: 3 })) yielded.push(commit.streamSeq);
    for (const expectedMessages of [undefined, 2, 100]) {
      const visited: number[] = [];
      await log.forEachCommit(
        ref,
        { afterSeq: 3, ...(expectedMessages === undefined ? {} : { expectedMessages }) },
        (commit) => void visited.push(commit.streamSeq),
      );
      expect(visited).toEqual(yielded);
    }
    const firstFive: number[] = [];
    await log.forEachCommit(ref, {}, (commit) => {
      firstFive.push(commit.lastSeq);
      return firstFive.length < 5;
    });
    expect(firstFive).toEqual([1, 2, 3, 4, 5]);
    expect(await log.firstCommitSeq(ref)).toBe(yielded[0]! - 3);
  });

  it('refuses an invalid event before writing anything, naming the field', async () => {
    await using fixture = await logFixture();
    const { log } = fixture;
    const ref = newRef();
    const good = userMessage(ref, 'fine');
    const bad = draftEvent({ ...ref, source: 'agent' }, 'action', {
      tool_call_id: '',
      tool_name: 'terminal',
      arguments: '{}',
      input: {},
      thought: [],
      response_id: 'r1',
      security_risk: 'low',
    });
    const attempt = log.append(ref, [good, bad], { expected: EMPTY_TAIL });
    await expect(attempt).rejects.toBeInstanceOf(LogError);
    await expect(attempt).rejects.toMatchObject({
      code: 'invalid_event',
      issues: [expect.objectContaining({ path: 'events.1.tool_call_id' })],
    });
    await expect(attempt).rejects.toThrow(/events\.1\.tool_call_id/);
    const wrongConversation = { ...userMessage(ref, 'x'), conversation: 'elsewhere' } as EventDraft;
    await expect(log.append(ref, [wrongConversation], { expected: EMPTY_TAIL })).rejects.toThrow(
      /events\.0\.conversation/,
    );
    const info = await log.jsm.streams.info(log.streamName);
    expect(info.state.messages).toBe(0);
  });

  it('refuses a commit larger than the server accepts', async () => {
    await using fixture = await logFixture({ maxMessageBytes: 4096 });
    const { log } = fixture;
    const ref = newRef();
    await expect(
      log.append(ref, [userMessage(ref, 'x'.repeat(10_000))], { expected: EMPTY_TAIL }),
    ).rejects.toMatchObject({ code: 'too_large' });
  });

  it('follows a conversation live from a position, including commits written later', async () => {
    await using fixture = await logFixture();
    const { log } = fixture;
    const ref = newRef();
    let tail = EMPTY_TAIL;
    const appendText = async (text: string): Promise<void> => {
      const commit = await log.append(ref, [userMessage(ref, text)], { expected: tail });
      tail = { streamSeq: commit.streamSeq, lastSeq: commit.lastSeq };
    };
    await appendText('1');
    await appendText('2');
    const controller = new AbortController();
    const seen: number[] = [];
    const following = (async () => {
      for await (const commit of log.follow(ref, { afterSeq: 1, signal: controller.signal })) {
        seen.push(...commit.events.map((event) => event.seq));
        if (seen.length === 3) controller.abort();
      }
    })();
    await appendText('3');
    await appendText('4');
    await following;
    expect(seen).toEqual([2, 3, 4]);
  });
});

describe('EventLog idempotent retries', () => {
  it('a retried append after a lost ack leaves one copy, even after others appended', async () => {
    await using fixture = await logFixture();
    const { log } = fixture;
    const ref = newRef();
    const commitId = 'commit-lost-ack';
    const drafts = [userMessage(ref, 'exactly once')];
    const first = await log.append(ref, drafts, { expected: EMPTY_TAIL, commitId });
    // the writer never saw this ack; meanwhile someone else appends
    await log.append(ref, [userMessage(ref, 'other writer')], {
      expected: { streamSeq: first.streamSeq, lastSeq: first.lastSeq },
    });
    // the stream refuses the repeat (its expected sequence is checked before the duplicate window);
    // the log finds the commit right after the position it expected, and answers with it
    const retried = await log.append(ref, drafts, { expected: EMPTY_TAIL, commitId });
    expect(retried).toEqual(first);
    const { events } = await log.readEvents(ref);
    expect(events.map((event) => (event.type === 'message' ? event.content[0] : undefined))).toEqual([
      { type: 'text', text: 'exactly once' },
      { type: 'text', text: 'other writer' },
    ]);
  });

  it('a commit id never stored is a conflict when the tail moved, even when the next commit is the same events under another id', async () => {
    await using fixture = await logFixture();
    const { log } = fixture;
    const ref = newRef();
    const drafts = [userMessage(ref, 'same words')];
    await log.append(ref, drafts, { expected: EMPTY_TAIL, commitId: 'commit-of-another-writer' });
    await expect(
      log.append(ref, drafts, { expected: EMPTY_TAIL, commitId: 'commit-never-stored' }),
    ).rejects.toBeInstanceOf(ConflictError);
    expect((await log.readEvents(ref)).events).toHaveLength(1);
  });
});

describe('EventLog with foreign and corrupt messages', () => {
  it('reports and skips them, keeps appending after them, and stops on them by policy', async () => {
    const reports: string[] = [];
    await using fixture = await logFixture({ onInvalid: (report) => reports.push(report.reason) });
    const { log, nc } = fixture;
    const js = jetstream(nc);
    const ref = newRef();
    const subject = log.subject(ref);
    const first = await log.append(ref, [userMessage(ref, 'before')], { expected: EMPTY_TAIL });
    await js.publish(subject, 'not a commit at all');
    const forged = headers();
    forged.set(CommitHeader.Protocol, '1');
    forged.set(CommitHeader.FirstSeq, '2');
    forged.set(CommitHeader.EventCount, '1');
    await js.publish(subject, '{"v":1,"commit":"x","tenant":"acme"', { headers: forged });
    await js.publish(subject, new Uint8Array([0xff, 0xfe, 0x00]), { headers: forged });
    const tail = await log.tail(ref);
    expect(tail.lastSeq).toBe(1);
    expect(tail.streamSeq).toBeGreaterThan(first.streamSeq);
    await log.append(ref, [userMessage(ref, 'after')], { expected: tail });
    reports.length = 0;
    const { events } = await log.readEvents(ref);
    expect(events.map((event) => event.seq)).toEqual([1, 2]);
    expect(reports).toHaveLength(3);
    expect(reports[0]).toMatch(/foreign/);
    await expect(log.readEvents(ref, { invalidPolicy: 'stop' })).rejects.toMatchObject({ code: 'corrupt_commit' });
    expect(await log.locate(ref, 2)).toBe((await log.tail(ref)).streamSeq);
  });

  it('writes each commit at the oldest protocol version that holds its events', async () => {
    await using fixture = await logFixture();
    const { log } = fixture;
    const ref = newRef();
    const first = await log.append(ref, [userMessage(ref, 'v1 only')], { expected: EMPTY_TAIL });
    const secret = draftEvent({ ...ref, source: 'user' }, 'secret_changed', { name: 'API_TOKEN', action: 'set' });
    await log.append(ref, [secret], { expected: { streamSeq: first.streamSeq, lastSeq: first.lastSeq } });
    const stored = async (seq: number) => {
      const message = await log.jsm.direct.getMessage(log.streamName, { seq, next_by_subj: log.filter(ref) });
      return {
        header: message?.header.get(CommitHeader.Protocol),
        body: message?.json<{ v: number; events: { v: number }[] }>(),
      };
    };
    const v1 = await stored(first.streamSeq);
    expect(v1).toMatchObject({ header: '1', body: { v: 1, events: [{ v: 1 }] } });
    const v2 = await stored(first.streamSeq + 1);
    expect(v2).toMatchObject({ header: '2', body: { v: 2, events: [{ v: 2 }] } });
    expect((await log.readEvents(ref)).events.map((event) => [event.type, event.v])).toEqual([
      ['message', 1],
      ['secret_changed', 2],
    ]);
  });

  it('fails loudly on a commit from a future protocol version', async () => {
    await using fixture = await logFixture();
    const { log, nc } = fixture;
    const ref = newRef();
    await log.append(ref, [userMessage(ref, 'v1')], { expected: EMPTY_TAIL });
    const future = headers();
    const newer = CURRENT_PROTOCOL_VERSION + 1;
    future.set(CommitHeader.Protocol, String(newer));
    future.set(CommitHeader.FirstSeq, '2');
    future.set(CommitHeader.EventCount, '1');
    const body = {
      v: newer,
      commit: 'f',
      tenant: ref.tenant,
      conversation: ref.conversation,
      first_seq: 2,
      events: [{ v: newer }],
    };
    await jetstream(nc).publish(log.subject(ref), JSON.stringify(body), { headers: future });
    await expect(log.readEvents(ref)).rejects.toMatchObject({ code: 'unsupported_protocol_version' });
  });
});
