import { readFile } from 'node:fs/promises';
import { CommitHeader, commitEventTypes, COMMIT_CONTENT_TYPE, type Event } from '@flotilla/events';
import { jetstream } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/transport-node';
import { describe, expect, it } from 'vitest';
import { encodeCommit } from './codec.js';
import {
  legacyConversationSubject,
  parseConversationSubject,
  subjectKind,
  subjectPartition,
  type ConversationRef,
} from './conversation-ref.js';
import { EMPTY_TAIL } from './stored-commit.js';
import { commitSubjectTransform } from '@flotilla/bus';
import { ConflictError } from './errors.js';
import { EventLog } from './event-log.js';
import { placeEvents } from './place-events.js';
import { logFixture, userMessage } from './test-support/fixtures.js';

/** A conversation's first commit as protocol v1 froze it (libs/events fixtures): what an older writer stored. */
const GOLDEN_START = new URL('../../events/fixtures/v1/commits/conversation-start.json', import.meta.url);

/**
 * Publishes a commit where a writer of the legacy layout put it (`<prefix>.<tenant>.<conversation>`,
 * expecting that subject's last sequence), with the headers it wrote.
 */
async function publishLegacy(
  log: EventLog,
  ref: ConversationRef,
  body: { commit: string; v: number; events: Event[] },
  expectedStreamSeq: number,
  data: string | Uint8Array = JSON.stringify(body),
): Promise<number> {
  const headers = natsHeaders();
  headers.set(CommitHeader.Protocol, String(body.v));
  headers.set(CommitHeader.EventTypes, commitEventTypes(body.events).join(','));
  headers.set(CommitHeader.FirstSeq, String(body.events[0]!.seq));
  headers.set(CommitHeader.EventCount, String(body.events.length));
  headers.set(CommitHeader.ContentType, COMMIT_CONTENT_TYPE);
  headers.set('Nats-Msg-Id', body.commit);
  headers.set('Nats-Expected-Last-Subject-Sequence', String(expectedStreamSeq));
  const ack = await jetstream(log.nc).publish(legacyConversationSubject(log.subjectPrefix, ref), data, { headers });
  return ack.seq;
}

describe('logs written before commits carried their kind', () => {
  it('are read, followed and continued in the current layout once the stream is moved to its subjects', async () => {
    // a stream as an older version created it: one subject per conversation
    await using fixture = await logFixture();
    const { log: current } = fixture;
    await current.jsm.streams.update(current.streamName, { subjects: [`${current.subjectPrefix}.*.*`] });
    const golden = JSON.parse(await readFile(GOLDEN_START, 'utf8')) as {
      commit: string;
      v: number;
      tenant: string;
      conversation: string;
      events: Event[];
    };
    const ref = { tenant: golden.tenant, conversation: golden.conversation };
    const first = await publishLegacy(current, ref, golden, 0);
    const secondEvents = placeEvents(ref, [userMessage(ref, 'still the legacy layout')], golden.events.length);
    const encoded = encodeCommit('legacy-second', ref, secondEvents);
    const second = await publishLegacy(
      current,
      ref,
      { commit: 'legacy-second', v: Number(encoded.headers.get(CommitHeader.Protocol)), events: secondEvents },
      first,
      encoded.data,
    );
    const options = { streamName: current.streamName, subjectPrefix: current.subjectPrefix };

    // a service of the current version refuses the stream until it is moved (an older writer could still append there)
    await expect(EventLog.open(fixture.nc, options)).rejects.toThrow(
      `nats stream edit ${current.streamName} --subjects '${current.subjectPrefix}.*.*.*'`,
    );
    // the admin (the launcher, on its own server) moves it; the stored commits stay
    await EventLog.open(fixture.nc, { ...options, upgradeSubjects: true });
    expect((await current.jsm.streams.info(current.streamName)).config.subjects).toEqual([
      `${current.subjectPrefix}.*.*.*`,
    ]);
    const log = await EventLog.open(fixture.nc, { ...options, writer: 'gateway' });

    const tail = await log.tail(ref);
    expect(tail).toEqual({ streamSeq: second, lastSeq: 4 });
    expect((await log.readEvents(ref)).events.map((event) => [event.seq, event.type])).toEqual([
      [1, 'system_prompt'],
      [2, 'message'],
      [3, 'state_change'],
      [4, 'message'],
    ]);
    expect(await log.firstCommitSeq(ref)).toBe(first);
    expect(await log.locate(ref, 4)).toBe(second);

    // a stale writer (it read the first legacy commit only) conflicts; the one at the tail continues the log
    await expect(
      log.append(ref, [userMessage(ref, 'stale')], { expected: { streamSeq: first, lastSeq: 3 } }),
    ).rejects.toBeInstanceOf(ConflictError);
    const third = await log.append(ref, [userMessage(ref, 'the current layout')], {
      expected: tail,
      commitId: 'third',
    });
    expect(third).toMatchObject({ firstSeq: 5, lastSeq: 5 });
    // a retry whose answer was lost finds its commit; a second writer on the old tail conflicts
    expect(
      (await log.append(ref, [userMessage(ref, 'the current layout')], { expected: tail, commitId: 'third' }))
        .streamSeq,
    ).toBe(third.streamSeq);
    await expect(log.append(ref, [userMessage(ref, 'racing')], { expected: tail })).rejects.toBeInstanceOf(
      ConflictError,
    );
    const fourth = await log.append(ref, [userMessage(ref, 'and on')], {
      expected: { streamSeq: third.streamSeq, lastSeq: 5 },
    });

    expect((await log.readEvents(ref)).events.map((event) => event.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    expect((await log.readEvents(ref, { afterSeq: 3 })).events.map((event) => event.seq)).toEqual([4, 5, 6]);
    expect(await log.tail(ref)).toEqual({ streamSeq: fourth.streamSeq, lastSeq: 6 });
    const stored = await log.jsm.direct.getMessage(log.streamName, { seq: third.streamSeq });
    // stored with its partition, which the server computes from tenant and conversation
    expect(stored?.subject).toMatch(
      new RegExp(`^${log.subjectPrefix.replaceAll('.', '\\.')}\\.${ref.tenant}\\.${ref.conversation}\\.user\\.(\\d+)$`),
    );
    expect(parseConversationSubject(log.subjectPrefix, stored!.subject)).toEqual(ref);
    expect(subjectKind(log.subjectPrefix, stored!.subject)).toBe('user');

    // a follower reads the legacy commits, then the current ones, then what lands next
    const controller = new AbortController();
    const seen: number[] = [];
    const following = (async () => {
      for await (const commit of log.follow(ref, { signal: controller.signal })) {
        seen.push(commit.lastSeq);
        if (commit.lastSeq === 7) controller.abort();
      }
    })();
    await expect.poll(() => seen).toEqual([3, 4, 5, 6]);
    await log.append(ref, [userMessage(ref, 'live')], { expected: { streamSeq: fourth.streamSeq, lastSeq: 6 } });
    await following;
    expect(seen).toEqual([3, 4, 5, 6, 7]);
  });

  it('commits stored before the stream partitioned them are read, followed and continued once it does', async () => {
    // a stream as the version before partitions created it: kinds in the subject, no transform
    await using fixture = await logFixture();
    const { log: current } = fixture;
    const config = (await current.jsm.streams.info(current.streamName)).config;
    await current.jsm.streams.update(current.streamName, { ...config, subject_transform: undefined });
    expect((await current.jsm.streams.info(current.streamName)).config.subject_transform).toBeUndefined();
    const options = { streamName: current.streamName, subjectPrefix: current.subjectPrefix };
    const before = await EventLog.open(fixture.nc, { ...options, writer: 'gateway' });
    // a service says what is missing, and works: each group's own consumer is delivered every commit
    expect(before.storageWarning).toMatch(/does not partition its commits/);
    const ref = { tenant: 'acme', conversation: 'before-partitions' };
    const first = await before.append(ref, [userMessage(ref, 'unpartitioned')], { expected: EMPTY_TAIL });
    expect((await before.jsm.direct.getMessage(before.streamName, { seq: first.streamSeq }))?.subject).toBe(
      `${before.subjectPrefix}.acme.before-partitions.user`,
    );

    // the admin (the launcher) partitions it; the stored commits stay where they are
    await EventLog.open(fixture.nc, { ...options, upgradeSubjects: true });
    expect((await current.jsm.streams.info(current.streamName)).config.subject_transform).toEqual(
      commitSubjectTransform(current.subjectPrefix),
    );
    const log = await EventLog.open(fixture.nc, { ...options, writer: 'gateway' });
    expect(log.storageWarning).toBeUndefined();
    // a stale writer conflicts across both layouts; the one at the tail continues the log
    const second = await log.append(ref, [userMessage(ref, 'partitioned')], {
      expected: { streamSeq: first.streamSeq, lastSeq: 1 },
    });
    await expect(
      log.append(ref, [userMessage(ref, 'stale')], { expected: { streamSeq: first.streamSeq, lastSeq: 1 } }),
    ).rejects.toBeInstanceOf(ConflictError);
    expect((await log.jsm.direct.getMessage(log.streamName, { seq: second.streamSeq }))?.subject).toMatch(
      /\.acme\.before-partitions\.user\.\d+$/,
    );
    expect((await log.readEvents(ref)).events.map((event) => event.seq)).toEqual([1, 2]);
    expect(await log.tail(ref)).toEqual({ streamSeq: second.streamSeq, lastSeq: 2 });
    expect(await log.locate(ref, 1)).toBe(first.streamSeq);

    const controller = new AbortController();
    const seen: number[] = [];
    const following = (async () => {
      for await (const commit of log.follow(ref, { signal: controller.signal })) {
        seen.push(commit.lastSeq);
        if (commit.lastSeq === 3) controller.abort();
      }
    })();
    await expect.poll(() => seen).toEqual([1, 2]);
    await log.append(ref, [userMessage(ref, 'live')], { expected: { streamSeq: second.streamSeq, lastSeq: 2 } });
    await following;
    expect(seen).toEqual([1, 2, 3]);
  });
});

describe('commit subjects of every layout', () => {
  it('name their conversation, kind and partition as stored now, before partitions and before kinds, and nothing else', () => {
    const prefix = 'flotilla.ev';
    expect(parseConversationSubject(prefix, 'flotilla.ev.acme.c1.step.15')).toEqual({
      tenant: 'acme',
      conversation: 'c1',
    });
    expect(subjectKind(prefix, 'flotilla.ev.acme.c1.step.0')).toBe('step');
    expect(subjectKind(prefix, 'flotilla.ev.acme.c1.tool')).toBe('tool');
    expect(parseConversationSubject(prefix, 'flotilla.ev.acme.c1')).toEqual({ tenant: 'acme', conversation: 'c1' });
    expect(subjectKind(prefix, 'flotilla.ev.acme.c1')).toBeUndefined();
    expect(subjectPartition(prefix, 'flotilla.ev.acme.c1.step.15')).toBe(15);
    expect(subjectPartition(prefix, 'flotilla.ev.acme.c1.step.0')).toBe(0);
    expect(subjectPartition(prefix, 'flotilla.ev.acme.c1.step')).toBeUndefined();
    expect(subjectPartition(prefix, 'flotilla.ev.acme.c1')).toBeUndefined();
    for (const subject of [
      'flotilla.ev.acme.c1.step.16',
      'flotilla.ev.acme.c1.step.01',
      'flotilla.ev.acme.c1.step.x',
      'flotilla.ev.acme.c1.nope.1',
      'flotilla.ev.acme.c1.step.1.2',
      'flotilla.ev.acme',
      'other.acme.c1.step.1',
    ]) {
      expect(parseConversationSubject(prefix, subject), subject).toBeUndefined();
      expect(subjectPartition(prefix, subject), subject).toBeUndefined();
    }
  });
});
