import type { EventPage } from '@flotilla/api';
import { positionOfEventId, type Event, type EventSource, type EventType } from '@flotilla/events';
import type { ConversationRef, EventLog, Tail } from '@flotilla/log';
import type { ConversationSnapshot } from '@flotilla/state';
import { ApiError } from './api-error.js';

export type EventFilter = {
  readonly type?: readonly EventType[];
  readonly source?: readonly EventSource[];
  readonly since?: string;
  readonly until?: string;
  readonly text?: string;
};

export type EventSearch = EventFilter & {
  readonly order: 'asc' | 'desc';
  readonly limit: number;
  readonly afterSeq?: number;
  readonly cursor?: string;
};

/** Cursor: where the next page starts, and which way it goes. Opaque to clients. */
type Cursor = { readonly seq: number; readonly order: 'asc' | 'desc' };

export function encodeCursor(cursor: Cursor): string {
  return Buffer.from(`e1:${cursor.order}:${cursor.seq}`, 'utf8').toString('base64url');
}

export function decodeCursor(text: string): Cursor {
  const match = /^e1:(asc|desc):(\d{1,15})$/.exec(Buffer.from(text, 'base64url').toString('utf8'));
  if (!match) throw new ApiError(400, 'invalid_cursor', 'The cursor is not one this API issued.');
  return { order: match[1] as Cursor['order'], seq: Number(match[2]) };
}

export function matches(event: Event, filter: EventFilter): boolean {
  if (filter.type && !filter.type.includes(event.type)) return false;
  if (filter.source && !filter.source.includes(event.source)) return false;
  if (filter.since && event.timestamp < filter.since) return false;
  if (filter.until && event.timestamp >= filter.until) return false;
  if (filter.text && !JSON.stringify(event).toLowerCase().includes(filter.text.toLowerCase())) return false;
  return true;
}

const hasFilter = (filter: EventFilter): boolean =>
  filter.type !== undefined ||
  filter.source !== undefined ||
  filter.since !== undefined ||
  filter.until !== undefined ||
  filter.text !== undefined;

/**
 * One page of a conversation's events. A cursor names a seq, so a page reads from that position
 * (located by binary search over direct gets) and stops as soon as the page is full: the cost is
 * the page plus the events the filter skips, never the whole log before it.
 */
export async function searchEvents(log: EventLog, ref: ConversationRef, search: EventSearch): Promise<EventPage> {
  const tail = await log.tail(ref);
  if (tail.lastSeq === 0) throw ApiError.notFound(ref.conversation);
  let order = search.order;
  let from: number; // asc: events with seq > from; desc: events with seq < from
  if (search.cursor !== undefined) {
    const cursor = decodeCursor(search.cursor);
    order = cursor.order;
    from = cursor.seq;
  } else if (order === 'asc') from = search.afterSeq ?? 0;
  else from = tail.lastSeq + 1;
  const items =
    order === 'asc' ? await forward(log, ref, tail, from, search) : await backward(log, ref, tail, from, search);
  const first = items[0];
  const last = items.at(-1);
  // a short page means the scan reached the end; a full one may have more behind it
  const more =
    items.length === search.limit && last !== undefined && (order === 'asc' ? last.seq < tail.lastSeq : last.seq > 1);
  return {
    items,
    next_cursor: more ? encodeCursor({ seq: last.seq, order }) : null,
    prev_cursor:
      first && (order === 'asc' ? first.seq > 1 : first.seq < tail.lastSeq)
        ? encodeCursor({ seq: first.seq, order: order === 'asc' ? 'desc' : 'asc' })
        : null,
  };
}

async function forward(
  log: EventLog,
  ref: ConversationRef,
  tail: Tail,
  after: number,
  search: EventSearch,
): Promise<Event[]> {
  const items: Event[] = [];
  if (after >= tail.lastSeq) return items;
  for await (const commit of log.read(ref, { afterSeq: after, until: tail })) {
    for (const event of commit.events) {
      if (event.seq <= after || !matches(event, search)) continue;
      items.push(event);
      if (items.length === search.limit) return items;
    }
  }
  return items;
}

/** Reads windows of the log backwards from `before`, doubling the window while the filter skips events. */
async function backward(
  log: EventLog,
  ref: ConversationRef,
  tail: Tail,
  before: number,
  search: EventSearch,
): Promise<Event[]> {
  const items: Event[] = [];
  let high = Math.min(before - 1, tail.lastSeq); // newest seq still to read
  let window = search.limit;
  while (high >= 1 && items.length < search.limit) {
    const low = Math.max(0, high - window); // read events in (low, high]
    const untilStreamSeq = await log.locate(ref, high, tail);
    if (untilStreamSeq === undefined) break;
    const chunk: Event[] = [];
    for await (const commit of log.read(ref, { afterSeq: low, until: { streamSeq: untilStreamSeq, lastSeq: high } })) {
      for (const event of commit.events)
        if (event.seq > low && event.seq <= high && matches(event, search)) chunk.push(event);
    }
    for (let index = chunk.length - 1; index >= 0 && items.length < search.limit; index -= 1) items.push(chunk[index]!);
    high = low;
    window = Math.min(window * 2, 4_096);
  }
  return items;
}

/** Can the snapshot's counts (by type and source) answer this filter? Time ranges and text need the events. */
export function countableFromSnapshot(filter: EventFilter): boolean {
  return filter.since === undefined && filter.until === undefined && filter.text === undefined;
}

/** Events of the snapshot matching a type and source filter (`countableFromSnapshot`): a sum over at most every type and source. */
export function countFromSnapshot(snapshot: ConversationSnapshot, filter: EventFilter): number {
  let count = 0;
  for (const [type, bySource] of Object.entries(snapshot.event_counts)) {
    if (filter.type && !filter.type.includes(type as EventType)) continue;
    for (const [source, n] of Object.entries(bySource ?? {}))
      if (!filter.source || filter.source.includes(source as EventSource)) count += n ?? 0;
  }
  return count;
}

/** Events matching the filter, by reading the whole log (the tail's seq without a filter). */
export async function countEvents(log: EventLog, ref: ConversationRef, filter: EventFilter): Promise<number> {
  const tail = await log.tail(ref);
  if (tail.lastSeq === 0) throw ApiError.notFound(ref.conversation);
  if (!hasFilter(filter)) return tail.lastSeq;
  let count = 0;
  for await (const commit of log.read(ref, { until: tail }))
    for (const event of commit.events) if (matches(event, filter)) count += 1;
  return count;
}

/**
 * One event by seq, or by id. A positional id (`positionOfEventId`) names the seq its commit starts
 * at: the commit is located by binary search and read alone, and the id is either in it or nowhere
 * (the log writes a positional id only in the commit it names). Other ids (events written before
 * ids were positional) are looked for by reading the log.
 */
export async function getEvent(log: EventLog, ref: ConversationRef, key: string): Promise<Event> {
  const tail = await log.tail(ref);
  if (tail.lastSeq === 0) throw ApiError.notFound(ref.conversation);
  const notFound = new ApiError(404, 'event_not_found', `No event "${key}" in conversation "${ref.conversation}".`);
  /** The commit holding `seq`: located by binary search over direct gets, then read with one. */
  const inCommitAt = async (seq: number, found: (event: Event) => boolean): Promise<Event> => {
    const streamSeq = seq < 1 || seq > tail.lastSeq ? undefined : await log.locate(ref, seq, tail);
    if (streamSeq === undefined) throw notFound;
    for await (const commit of log.read(ref, {
      afterSeq: seq - 1,
      afterStreamSeq: streamSeq - 1,
      untilStreamSeq: streamSeq,
    })) {
      const event = commit.events.find(found);
      if (event) return event;
    }
    throw notFound;
  };
  if (/^\d{1,15}$/.test(key)) {
    const seq = Number(key);
    return inCommitAt(seq, (candidate) => candidate.seq === seq);
  }
  const position = positionOfEventId(key);
  if (position !== undefined) return inCommitAt(position, (candidate) => candidate.id === key);
  for await (const commit of log.read(ref, { until: tail })) {
    const event = commit.events.find((candidate) => candidate.id === key);
    if (event) return event;
  }
  throw notFound;
}
