import { foldLoaded, parseConversationCheckpoint, type ConversationCheckpoint } from '@flotilla/agent';
import type { EventDraft } from '@flotilla/events';
import { EMPTY_TAIL, EventLog, type ConversationRef, type Tail } from '@flotilla/log';
import { NatsServerProcess } from '@flotilla/nats-embedded';
import { CheckpointStore, loadConversation, type CheckpointReading } from '@flotilla/runtime';
import { toChatMessages } from '@flotilla/view';
import { CheckpointWriter } from '@flotilla/workers';
import { DeliverPolicy, jetstream, type JetStreamClient } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { condensedConversationCommits } from './condensed-conversation.js';
import { conversationCommits } from './conversation-fixture.js';
import { median, ms, ratio, table } from './stats.js';

type Case = { readonly events: number; readonly condensed: boolean };

/**
 * Cold load of a conversation into an LLM-ready view, as a step worker that does not hold it
 * loads it: read and validate the log (from the start, or from its view checkpoint), fold the
 * view, what the conversation owes and its run, and render the chat messages. Each against a raw
 * ordered-consumer replay of the same subject (every message delivered, nothing decoded), same
 * server, same run, alternating. The conversations are written as the runtime writes them, and
 * their checkpoints as the projector does (a CheckpointWriter told of every commit): plain ones
 * (no condensation: the view is the whole history, checkpointed every 1,000 events while it fits
 * a KV value) and ones condensed as the default condenser settings do it (a view of at most
 * ~120 items, a checkpoint at each condensation).
 */
export async function benchColdLoad(
  sizes: readonly number[] = [1_000, 10_000],
  repeats = 9,
  condensedSizes: readonly number[] = [10_000, 100_000],
): Promise<string> {
  await using server = await NatsServerProcess.start();
  const nc = await connect({ servers: server.url });
  try {
    const log = await EventLog.open(nc, { streamName: 'BENCH_LOAD', subjectPrefix: 'bench.load' });
    const store = await CheckpointStore.open(nc, {
      parse: parseConversationCheckpoint,
      bucket: 'BENCH_LOAD_CHECKPOINTS',
    });
    const writer = new CheckpointWriter(log, store);
    const js = jetstream(nc);
    const cases: Case[] = [
      ...sizes.map((events) => ({ events, condensed: false })),
      ...condensedSizes.map((events) => ({ events, condensed: true })),
    ];
    const rows = [
      [
        'events',
        'condensations',
        'commits',
        'raw replay p50',
        'whole log p50',
        'ratio',
        'from checkpoint p50',
        'ratio',
        'events read',
        'checkpoint',
      ],
    ];
    for (const { events, condensed } of cases) {
      const ref = { tenant: 'bench', conversation: `load${events}${condensed ? 'c' : ''}` };
      const commits = condensed ? condensedConversationCommits(ref, events) : conversationCommits(ref, events);
      const { tail, condensations } = await writeNoting(log, writer, ref, commits);
      const entry = await store.kv.get(`${ref.tenant}.${ref.conversation}`);
      const checkpoint = entry?.operation === 'PUT' && entry.value.length > 0 ? entry : undefined;
      const checkpointAt = checkpoint ? (await store.get(ref))?.lastSeq : undefined;
      const rounds = events >= 50_000 ? 3 : repeats;
      const raw: number[] = [];
      const whole: number[] = [];
      const fromCheckpoint: number[] = [];
      let read = 0;
      let commitCount = 0;
      for (let round = 0; round < rounds + 1; round += 1) {
        collectGarbage();
        let started = performance.now();
        commitCount = await replay(js, log, ref, tail);
        if (round > 0) raw.push(performance.now() - started);
        collectGarbage();
        started = performance.now();
        const all = await coldLoad(log, ref, tail);
        if (round > 0) whole.push(performance.now() - started);
        collectGarbage();
        started = performance.now();
        const checkpointed = await coldLoad(log, ref, tail, { store });
        if (round > 0) fromCheckpoint.push(performance.now() - started);
        read = checkpointed.read;
        if (JSON.stringify([checkpointed.messages, checkpointed.next]) !== JSON.stringify([all.messages, all.next]))
          throw new Error(`${ref.conversation}: the load from the checkpoint differs from the whole log's`);
      }
      rows.push([
        String(tail.lastSeq),
        String(condensations),
        String(commitCount),
        ms(median(raw)),
        ms(median(whole)),
        ratio(median(whole), median(raw)),
        ms(median(fromCheckpoint)),
        ratio(median(fromCheckpoint), median(raw)),
        String(read),
        checkpoint
          ? `${(checkpoint.value.length / 1024).toFixed(0)} KiB gzipped at ${checkpointAt}`
          : 'none (too large)',
      ]);
    }
    return [
      'Cold load into an LLM-ready view (goals: ratio <= 1.5 at 1,000 and 10,000 events; 100,000 events with condensations under 50 ms)',
      table(rows),
      'whole log: read and validate every commit, fold the view, progress and run, render the chat messages;',
      'from checkpoint: the same from the view checkpoint and the log after it (and the few steps before it that stuck detection reads).',
    ].join('\n');
  } finally {
    await nc.close();
  }
}

/**
 * With `NODE_OPTIONS=--expose-gc`, collects what the previous measurement left (a whole-log load
 * of 10,000 events leaves ~50 MB), so that no measurement pays for another's garbage.
 */
function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

/** Appends the commits as the runtime does, telling the checkpoint writer of each, as the projector is. */
async function writeNoting(
  log: EventLog,
  writer: CheckpointWriter,
  ref: ConversationRef,
  commits: Iterable<EventDraft[]>,
): Promise<{ tail: Tail; condensations: number }> {
  let tail: Tail = EMPTY_TAIL;
  let condensations = 0;
  for (const drafts of commits) {
    const commit = await log.append(ref, drafts, { expected: tail });
    tail = { streamSeq: commit.streamSeq, lastSeq: commit.lastSeq };
    const eventTypes = [...new Set(drafts.map((draft) => draft.type))];
    if (eventTypes.includes('condensation')) condensations += 1;
    await writer.noteCommit(ref, { streamSeq: commit.streamSeq, lastSeq: commit.lastSeq, eventTypes });
  }
  return { tail, condensations };
}

/** Every message of the subject delivered by an ordered consumer, nothing decoded. */
async function replay(js: JetStreamClient, log: EventLog, ref: ConversationRef, tail: Tail): Promise<number> {
  const consumer = await js.consumers.get(log.streamName, {
    filter_subjects: log.filter(ref),
    deliver_policy: DeliverPolicy.All,
  });
  const messages = await consumer.consume({ max_messages: 1024 });
  let count = 0;
  for await (const message of messages) {
    count += message.data.length > 0 ? 1 : 0;
    if (message.seq >= tail.streamSeq || message.info.pending === 0) break;
  }
  await messages.close();
  return count;
}

/** What a step worker's cold load does: the conversation read, its folds, the chat messages. */
async function coldLoad(
  log: EventLog,
  ref: ConversationRef,
  tail: Tail,
  checkpoints?: CheckpointReading<ConversationCheckpoint>,
): Promise<{ messages: unknown; next: unknown; read: number }> {
  const loaded = await loadConversation(log, ref, tail.streamSeq, checkpoints);
  const folds = foldLoaded(loaded);
  const messages = toChatMessages(folds.view.view());
  if (loaded.tail.lastSeq !== tail.lastSeq || messages.length === 0)
    throw new Error('the load returned the wrong conversation');
  return { messages, next: folds.progress.nextWork(), read: loaded.events.length };
}
