import type { CommandResult, CountResult, FinalResponse } from '@flotilla/api';
import { draftEvent, positionalId, positionOfEventId, type Event } from '@flotilla/events';
import type { EventLog, StoredCommit } from '@flotilla/log';
import { SnapshotStore } from '@flotilla/state';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACME_KEY, startGatewayHarness, type GatewayHarness } from './test-support/gateway-harness.js';
import {
  awaitingConfirmation,
  writeLongConversation,
  type LongConversation,
} from './test-support/long-conversation.js';

const EVENTS = 20_000;
const ref = { tenant: 'acme', conversation: 'long-history' };
const waiting = { tenant: 'acme', conversation: 'long-waiting' };
let h: GatewayHarness;
let long: LongConversation;
let legacy: Event;
/** Commits the gateway read from the log (through EventLog.read) since the last reset. */
let commitsRead = 0;

/** Counts every commit read through the harness's log (the gateway's), however it reads. */
function countReads(log: EventLog): void {
  const read = log.read.bind(log);
  log.read = async function* (...args: Parameters<EventLog['read']>): AsyncGenerator<StoredCommit> {
    for await (const commit of read(...args)) {
      commitsRead += 1;
      yield commit;
    }
  };
  const readEvents = log.readEvents.bind(log);
  log.readEvents = async (...args: Parameters<EventLog['readEvents']>) => {
    const result = await readEvents(...args);
    commitsRead += result.events.length; // at least one per commit
    return result;
  };
}

async function call<T>(method: string, path: string, body?: unknown): Promise<{ status: number; json: T }> {
  const response = await fetch(`${h.url}/v1/conversations/${path}`, {
    method,
    headers: {
      authorization: `Bearer ${ACME_KEY}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, json: (await response.json()) as T };
}

beforeAll(async () => {
  h = await startGatewayHarness();
  long = await writeLongConversation(h.log, ref, EVENTS);
  // an event written before ids were positional (a random UUID), near the end of the history
  const [commit] = [
    await h.log.append(
      ref,
      [
        draftEvent({ ...ref, source: 'user' }, 'message', {
          role: 'user',
          content: [{ type: 'text', text: 'old-style id' }],
        }),
      ],
      { expected: long.tail },
    ),
  ];
  legacy = commit.events[0]!;
  await writeLongConversation(h.log, waiting, 2_000, { waiting: true });
  // what the projector keeps: the snapshots, caught up with the logs
  const snapshots = await SnapshotStore.open(h.nc);
  await snapshots.catchUp(ref, h.log);
  await snapshots.catchUp(waiting, h.log);
  countReads(h.log);
}, 120_000);
afterAll(async () => {
  await h?.[Symbol.asyncDispose]();
});

describe(`a conversation of ${EVENTS.toLocaleString('en')} events`, () => {
  it('takes a message reading only what the snapshot lacks, and the next one reads nothing', async () => {
    commitsRead = 0;
    const first = await call<CommandResult>('POST', `${ref.conversation}/messages`, { text: 'one more thing' });
    expect(first).toMatchObject({ status: 202, json: { appended: true, status: 'idle', last_seq: legacy.seq + 2 } });
    expect(commitsRead).toBe(0);
    commitsRead = 0;
    const second = await call<CommandResult>('POST', `${ref.conversation}/messages`, { text: 'and run', run: true });
    expect(second).toMatchObject({
      status: 202,
      json: { appended: true, status: 'running', last_seq: legacy.seq + 4 },
    });
    expect(commitsRead).toBe(0);
    commitsRead = 0;
    expect(await call<CommandResult>('POST', `${ref.conversation}/run`)).toMatchObject({
      status: 409,
      json: { error: { code: 'already_running' } },
    });
    expect((await call<CommandResult>('POST', `${ref.conversation}/pause`)).json).toMatchObject({
      appended: true,
      status: 'paused',
    });
    expect(commitsRead).toBe(0);
  });

  it('approves and rejects what waits for confirmation from the snapshot, however long the history', async () => {
    commitsRead = 0;
    const approved = await call<CommandResult>('POST', `${waiting.conversation}/confirmation`, { decision: 'approve' });
    expect(approved).toMatchObject({ status: 202, json: { appended: true, status: 'running' } });
    expect(commitsRead).toBe(0);
    const events = await h.acme.searchEvents(waiting.conversation, { order: 'desc', limit: 5 });
    const pending = events.items.find((event) => event.type === 'action')!;
    expect(events.items.find((event) => event.type === 'approval')).toMatchObject({ action_ids: [pending.id] });
    // the step asks again: a runner's commit lands after the snapshot
    const tail = await h.log.tail(waiting);
    const asked = await h.log.append(waiting, awaitingConfirmation(waiting, 'call_again'), { expected: tail });
    commitsRead = 0;
    const rejected = await call<CommandResult>('POST', `${waiting.conversation}/confirmation`, {
      decision: 'reject',
      reason: 'too risky',
    });
    // both actions wait (the approved one was never started: no runner here)
    expect(rejected).toMatchObject({
      status: 202,
      json: { appended: true, status: 'idle', last_seq: asked.lastSeq + 3 },
    });
    expect(commitsRead).toBe(1);
    const after = await h.acme.searchEvents(waiting.conversation, { order: 'desc', limit: 3 });
    expect(after.items.map((event) => event.type)).toEqual(['state_change', 'user_rejection', 'user_rejection']);
    expect(after.items.slice(1).map((event) => (event.type === 'user_rejection' ? event.action_id : ''))).toEqual([
      asked.events[1]!.id,
      pending.id,
    ]);
    expect(await call('POST', `${waiting.conversation}/confirmation`, { decision: 'approve' })).toMatchObject({
      status: 409,
      json: { error: { code: 'not_waiting' } },
    });
  });

  it('finds an event by its positional id reading one commit, anywhere in the history', async () => {
    for (const known of long.sample) {
      expect(positionOfEventId(known.id)).toBeDefined();
      commitsRead = 0;
      const event = await h.acme.getEvent(ref.conversation, known.id);
      expect(event).toMatchObject({ id: known.id, seq: known.seq, type: known.type });
      expect(commitsRead).toBe(1);
    }
    expect(long.sample.length).toBeGreaterThan(20);
  });

  it('finds an event by an older (random) id, and by seq; an unknown positional id is 404 after one commit', async () => {
    expect(positionOfEventId(legacy.id)).toBeUndefined();
    expect(await h.acme.getEvent(ref.conversation, legacy.id)).toEqual(legacy);
    expect(await h.acme.getEvent(ref.conversation, 12_345)).toMatchObject({ seq: 12_345 });
    const unknown = positionalId('6f1c2b3a-9d8e-4f70-a1b2-c3d4e5f60718', long.sample[3]!.seq);
    commitsRead = 0;
    expect(
      (
        await fetch(`${h.url}/v1/conversations/${ref.conversation}/events/${unknown}`, {
          headers: { authorization: `Bearer ${ACME_KEY}` },
        })
      ).status,
    ).toBe(404);
    expect(commitsRead).toBeLessThanOrEqual(1);
    const beyond = positionalId('6f1c2b3a-9d8e-4f70-a1b2-c3d4e5f60718', 10 * EVENTS);
    expect(
      (
        await fetch(`${h.url}/v1/conversations/${ref.conversation}/events/${beyond}`, {
          headers: { authorization: `Bearer ${ACME_KEY}` },
        })
      ).status,
    ).toBe(404);
  });

  it('counts events by type and source from the snapshot, equal to a scan, and by time with a scan', async () => {
    const { events } = await h.log.readEvents(ref);
    const count = async (query: string): Promise<number> =>
      (await call<CountResult>('GET', `${ref.conversation}/events/count?${query}`)).json.count;
    const filters: [string, (event: Event) => boolean][] = [
      ['type=action', (event) => event.type === 'action'],
      ['type=message&source=user', (event) => event.type === 'message' && event.source === 'user'],
      ['type=message,observation', (event) => event.type === 'message' || event.type === 'observation'],
      ['source=system,environment', (event) => event.source === 'system' || event.source === 'environment'],
      ['type=approval', (event) => event.type === 'approval'],
    ];
    for (const [query, matches] of filters) {
      commitsRead = 0;
      expect(await count(query), query).toBe(events.filter(matches).length);
      expect(commitsRead, query).toBe(0);
    }
    expect(await count('')).toBe(events.length);
    const since = events[10_000]!.timestamp;
    expect(await count(`type=action&since=${since}`)).toBe(
      events.filter((event) => event.type === 'action' && event.timestamp >= since).length,
    );
  });

  it('answers the final response with one read of the commit holding it', async () => {
    const answered = { tenant: 'acme', conversation: 'long-answered' };
    const written = await writeLongConversation(h.log, answered, 3_000);
    await (await SnapshotStore.open(h.nc)).catchUp(answered, h.log);
    commitsRead = 0;
    const response = await call<FinalResponse>('GET', `${answered.conversation}/final-response`);
    expect(response.json).toEqual({ text: 'All tests pass.', seq: written.tail.lastSeq - 1, status: 'finished' });
    expect(commitsRead).toBe(1);
    await h.log.append(
      answered,
      [
        draftEvent({ ...answered, source: 'user' }, 'message', {
          role: 'user',
          content: [{ type: 'text', text: 'new task' }],
        }),
      ],
      { expected: written.tail },
    );
    expect((await call<FinalResponse>('GET', `${answered.conversation}/final-response`)).json).toEqual({
      text: null,
      seq: null,
      status: 'finished',
    });
  });
});
