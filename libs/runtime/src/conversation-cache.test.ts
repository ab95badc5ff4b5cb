import { draftEvent, type Event } from '@flotilla/events';
import {
  EMPTY_TAIL,
  EventLog,
  type ConversationRef,
  type RawMessage,
  type StoredCommit,
  type Tail,
} from '@flotilla/log';
import { startNats, uniqueName, type NatsTestServer } from '@flotilla/testing';
import { jetstream } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConversationCache } from './conversation-cache.js';

let server: NatsTestServer;
let nc: NatsConnection;
let log: EventLog;
/** Direct gets on the log's stream, counted as nats-server receives them. */
let gets = 0;
let watcher: NatsConnection;

beforeAll(async () => {
  server = await startNats();
  nc = await connect({ servers: server.url });
  const name = uniqueName('CACHE');
  log = await EventLog.open(nc, { streamName: name, subjectPrefix: `t.${name.toLowerCase()}` });
  watcher = await connect({ servers: server.url });
  const count = (): void => {
    gets += 1;
  };
  watcher.subscribe(`$JS.API.DIRECT.GET.${name}.>`, { callback: count });
  watcher.subscribe(`$JS.API.DIRECT.GET.${name}`, { callback: count });
  await watcher.flush();
  return () => watcher.close();
});

afterAll(async () => {
  await nc.close();
  await server[Symbol.asyncDispose]();
});

/** A conversation of `count` commits of two events each, and each commit as a consumer delivers it. */
async function conversation(
  count: number,
): Promise<{ ref: ConversationRef; commits: StoredCommit[]; delivered: RawMessage[]; tail: Tail }> {
  const ref = { tenant: 'acme', conversation: uniqueName('c') };
  const commits: StoredCommit[] = [];
  let tail: Tail = EMPTY_TAIL;
  for (let index = 0; index < count; index += 1) {
    const drafts = ['a', 'b'].map((part) =>
      draftEvent({ ...ref, source: 'user' }, 'message', {
        role: 'user',
        content: [{ type: 'text', text: `${part}${index}` }],
      }),
    );
    const commit = await log.append(ref, drafts, { expected: tail });
    commits.push(commit);
    tail = { streamSeq: commit.streamSeq, lastSeq: commit.lastSeq };
  }
  const delivered = await Promise.all(
    commits.map(async (commit) => {
      const stored = await log.jsm.streams.getMessage(log.streamName, { seq: commit.streamSeq });
      return { subject: stored!.subject, seq: stored!.seq, data: stored!.data, headers: stored!.header };
    }),
  );
  return { ref, commits, delivered, tail };
}

/** Direct gets made while `action` ran (after its requests reached the server). */
async function countGets(action: () => Promise<unknown>): Promise<number> {
  // every earlier get reached the server (flush), and its copy reached the watcher (the watcher's
  // own round trip comes back after what the server sent it before), so none is counted here
  await nc.flush();
  await watcher.flush();
  const before = gets;
  await action();
  await nc.flush();
  await watcher.flush();
  return gets - before;
}

const texts = (events: readonly Event[]): string[] =>
  events.map((event) =>
    event.type === 'message' && event.content[0]?.type === 'text' ? event.content[0].text : event.type,
  );

describe('a cached conversation that another instance was delivered some commits of', () => {
  it('holds the commits delivered past a gap, and a load reads only the gap', async () => {
    const { ref, commits, delivered } = await conversation(7);
    const cache = new ConversationCache(log);
    await cache.load(ref, commits[1]!.streamSeq);
    // commits 2 and 4 went to another instance; 3 and 5 came here (dismissed from their headers), then 6 is loaded
    expect(cache.extend(ref, delivered[3]!)).toBe(false);
    expect(cache.extend(ref, delivered[5]!)).toBe(false);
    expect(cache.peek(ref)!.tail.streamSeq).toBe(commits[1]!.streamSeq);
    let loaded;
    expect(await countGets(async () => (loaded = await cache.load(ref, commits[6]!.streamSeq, delivered[6])))).toBe(2);
    expect(texts(loaded!.events)).toEqual(commits.flatMap((_, index) => [`a${index}`, `b${index}`]));
    expect(loaded!.tail).toEqual({ streamSeq: commits[6]!.streamSeq, lastSeq: 14 });
  });

  it('a load up to an earlier commit stops there, held commits beyond it waiting; the commit that fills a gap applies what was held', async () => {
    const { ref, commits, delivered } = await conversation(5);
    const cache = new ConversationCache(log);
    await cache.load(ref, commits[0]!.streamSeq);
    cache.extend(ref, delivered[2]!);
    cache.extend(ref, delivered[4]!);
    const loaded = await cache.load(ref, commits[2]!.streamSeq);
    expect(loaded.tail.streamSeq).toBe(commits[2]!.streamSeq);
    expect(texts(loaded.events)).toEqual(['a0', 'b0', 'a1', 'b1', 'a2', 'b2']);
    // commit 3 arrives here: it continues the cache, and the held commit 4 follows it, without a read
    expect(await countGets(async () => expect(cache.extend(ref, delivered[3]!)).toBe(true))).toBe(0);
    expect(cache.peek(ref)!.tail).toEqual({ streamSeq: commits[4]!.streamSeq, lastSeq: 10 });
  });

  it('a message on the subject that is no commit, between the cache and a held commit: the load still reads the log whole and in order', async () => {
    const { ref, commits } = await conversation(2);
    const cache = new ConversationCache(log);
    await cache.load(ref, commits[0]!.streamSeq);
    const foreign = await jetstream(nc).publish(log.subject(ref), new TextEncoder().encode('not a commit'));
    const later = await log.append(
      ref,
      [draftEvent({ ...ref, source: 'user' }, 'message', { role: 'user', content: [{ type: 'text', text: 'a2' }] })],
      {
        expected: { streamSeq: foreign.seq, lastSeq: commits[1]!.lastSeq },
      },
    );
    const laterMessage = await log.jsm.streams.getMessage(log.streamName, { seq: later.streamSeq });
    cache.extend(ref, {
      subject: laterMessage!.subject,
      seq: laterMessage!.seq,
      data: laterMessage!.data,
      headers: laterMessage!.header,
    });
    const loaded = await cache.load(ref, later.streamSeq);
    expect(texts(loaded.events)).toEqual(['a0', 'b0', 'a1', 'b1', 'a2']);
    expect(loaded.tail).toEqual({ streamSeq: later.streamSeq, lastSeq: 5 });
  });
});
