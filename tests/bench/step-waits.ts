import type { ConversationRef, EventLog } from '@flotilla/log';
import { commitTimeline } from './commit-timeline.js';

/**
 * A conversation's step waits (ms): for each step, from the commit that made it owed being stored
 * (the commit before the step's own: the run request, or the observations of the previous step)
 * to the step's commit being stored, less its model call as the step worker timed it
 * (`llm_usage.latency_ms`). What is left is the step's time in the step workers' group and in
 * the worker besides the model: the queue before a slot, delivery, load, view and append.
 */
export async function stepWaits(log: EventLog, ref: ConversationRef): Promise<number[]> {
  return (await stepWaitParts(log, ref)).map((part) => part.wait);
}

/**
 * Each step wait split where the step's `llm_usage` event was drafted (its timestamp, ms, taken
 * as the model call ended): `before`, from the owing commit to the model call's start (delivery,
 * the wait for a slot, load, view); `after`, from the call's end to the step's commit being stored
 * (the append). The two add up to `wait` but for the timestamp's millisecond rounding.
 */
export async function stepWaitParts(
  log: EventLog,
  ref: ConversationRef,
): Promise<{ wait: number; before: number; after: number }[]> {
  const stored = new Map((await commitTimeline(log, ref)).map((commit) => [commit.streamSeq, commit.storedAtMs]));
  const commits: { streamSeq: number; modelMs: number | undefined; modelEndedAt: number }[] = [];
  await log.forEachCommit(ref, {}, (commit) => {
    const usage = commit.events.find((event) => event.type === 'llm_usage' && event.purpose === 'step');
    commits.push({
      streamSeq: commit.streamSeq,
      modelMs: usage?.type === 'llm_usage' ? usage.latency_ms : undefined,
      modelEndedAt: usage ? Date.parse(usage.timestamp) : Number.NaN,
    });
  });
  const waits: { wait: number; before: number; after: number }[] = [];
  for (let index = 1; index < commits.length; index += 1) {
    const { streamSeq, modelMs, modelEndedAt } = commits[index]!;
    if (modelMs === undefined) continue;
    const owedAt = stored.get(commits[index - 1]!.streamSeq);
    const doneAt = stored.get(streamSeq);
    if (owedAt === undefined || doneAt === undefined) continue;
    waits.push({
      wait: doneAt - owedAt - modelMs,
      before: modelEndedAt - modelMs - owedAt,
      after: doneAt - modelEndedAt,
    });
  }
  return waits;
}
