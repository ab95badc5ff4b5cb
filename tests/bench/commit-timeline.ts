import { CommitHeader } from '@flotilla/events';
import type { ConversationRef, EventLog } from '@flotilla/log';
import { jetstream, type JsMsg } from '@nats-io/jetstream';

export type TimedCommit = {
  readonly streamSeq: number;
  readonly eventTypes: readonly string[];
  readonly storedAtMs: number;
};

/** A conversation's commits with the server's store timestamps (ms, sub-ms precision) and event-type headers. */
export async function commitTimeline(log: EventLog, ref: ConversationRef): Promise<TimedCommit[]> {
  const tail = await log.tail(ref);
  if (tail.streamSeq === 0) return [];
  const consumer = await jetstream(log.nc).consumers.get(log.streamName, { filter_subjects: log.filter(ref) });
  const messages = await consumer.consume({ max_messages: 1024 });
  const commits: TimedCommit[] = [];
  for await (const message of messages as AsyncIterable<JsMsg>) {
    commits.push({
      streamSeq: message.seq,
      eventTypes: (message.headers?.get(CommitHeader.EventTypes) ?? '').split(',').filter(Boolean),
      storedAtMs: Number(message.info.timestampNanos) / 1e6, // ns since epoch: a double keeps ~0.25 µs
    });
    if (message.seq >= tail.streamSeq || message.info.pending === 0) break;
  }
  await messages.close();
  return commits;
}

/** Time between consecutive action commits: one full step cycle each. */
export function stepCycleTimes(commits: readonly TimedCommit[]): number[] {
  const actions = commits.filter((commit) => commit.eventTypes.includes('action'));
  return actions.slice(1).map((commit, index) => commit.storedAtMs - actions[index]!.storedAtMs);
}

/**
 * Each cycle split at its commits: from an action commit to the next commit of each later kind
 * (execution start, observation, next action), as time from the previous one. Keys name the hop.
 */
export function cycleHops(commits: readonly TimedCommit[]): Map<string, number[]> {
  const hops = new Map<string, number[]>([
    ['action -> execution start (tool runner picks it up)', []],
    ['execution start -> observation (runs the tool)', []],
    ['observation -> next action (step worker and model)', []],
  ]);
  const [pickUp, run, step] = [...hops.values()] as [number[], number[], number[]];
  for (let index = 0; index + 3 < commits.length; index += 1) {
    const [action, started, observed, next] = commits.slice(index, index + 4) as [
      TimedCommit,
      TimedCommit,
      TimedCommit,
      TimedCommit,
    ];
    if (
      !action.eventTypes.includes('action') ||
      !started.eventTypes.includes('execution_started') ||
      !observed.eventTypes.includes('observation') ||
      !next.eventTypes.includes('action')
    )
      continue;
    pickUp.push(started.storedAtMs - action.storedAtMs);
    run.push(observed.storedAtMs - started.storedAtMs);
    step.push(next.storedAtMs - observed.storedAtMs);
  }
  return hops;
}
