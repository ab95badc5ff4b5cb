import { CommitHeader, newId, type Event, type EventDraft } from '@flotilla/events';
import { activeTraceparent } from '@flotilla/tracing';
import type { JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { commitKindOf, type CommitKind } from '@flotilla/bus';
import { encodeCommit } from './codec.js';
import { commitAcceptor, scanCommits, type ScanPlan } from './commit-scan.js';
import { ConversationMessages } from './conversation-messages.js';
import { conversationTail, locateCommit, nextPlaced } from './conversation-positions.js';
import {
  conversationFilter,
  conversationSubject,
  DEFAULT_SUBJECT_PREFIX,
  type ConversationRef,
} from './conversation-ref.js';
import { isConflict, LogError, LogErrorCode } from './errors.js';
import type { AppendOptions, EventLogOptions, ReadOptions } from './event-log-options.js';
import { JetStreamPublisher } from './jetstream-publisher.js';
import { LegacyLayout } from './legacy-layout.js';
import { placeEvents } from './place-events.js';
import { classifyPublishAnswer } from './publish-errors.js';
import type { StoredCommit, Tail } from './stored-commit.js';
import { StreamGets } from './stream-gets.js';
import { connectManager, DEFAULT_STREAM_NAME, ensureEventStream } from './stream-setup.js';

const MSG_ID_HEADER = 'Nats-Msg-Id';
const EXPECTED_SUBJECT_HEADER = 'Nats-Expected-Last-Subject-Sequence-Subject';

/**
 * A conversation's event log on JetStream: its commits on `<prefix>.<tenant>.<conversation>.<kind>`,
 * one message per commit, optimistic concurrency on the last sequence of the conversation's
 * subjects (whatever the kinds), idempotent retries. Logs written before commits carried their
 * kind (`<prefix>.<tenant>.<conversation>`) are read as the start of the conversation's log and
 * continued in the current layout.
 */
export class EventLog {
  readonly streamName: string;
  readonly subjectPrefix: string;
  /** The kind of every commit this log appends (its writer's). */
  readonly kind: CommitKind;
  readonly #publisher: JetStreamPublisher;
  readonly #maxPayload: number;
  /** Set when the existing stream's settings differ from the configured ones (see ensureEventStream): log it. */
  storageWarning: string | undefined;
  // the next three are set by open, once the stream is known (its replicas, its legacy-layout commits)
  /** Single-message gets on the stream, from its leader when it is replicated. */
  #gets!: StreamGets;
  /** The stream's commits of the legacy layout, if it holds any. */
  #legacy!: LegacyLayout;
  /** The conversations' messages, read across both layouts. */
  #messages!: ConversationMessages;

  private constructor(
    readonly nc: NatsConnection,
    readonly jsm: JetStreamManager,
    private readonly options: EventLogOptions,
  ) {
    this.streamName = options.streamName ?? DEFAULT_STREAM_NAME;
    this.subjectPrefix = options.subjectPrefix ?? DEFAULT_SUBJECT_PREFIX;
    this.kind = commitKindOf(options.writer);
    this.#publisher = new JetStreamPublisher(nc, options.appendTimeoutMs ?? 5_000);
    this.#maxPayload = Math.min(
      nc.info?.max_payload ?? 1024 * 1024,
      options.maxMessageBytes ?? Number.POSITIVE_INFINITY,
    );
  }

  /** Checks the server, creates or verifies the events stream, and returns the log. */
  static async open(nc: NatsConnection, options: EventLogOptions = {}): Promise<EventLog> {
    const jsm = await connectManager(nc);
    const log = new EventLog(nc, jsm, options);
    const stream = await ensureEventStream(jsm, log.streamName, log.subjectPrefix, options);
    log.storageWarning = stream.warning;
    log.#gets = new StreamGets(jsm, log.streamName, stream.replicas > 1);
    log.#legacy = await LegacyLayout.detect(log.#gets, log.subjectPrefix);
    log.#messages = new ConversationMessages(nc, log.#gets, log.#legacy, log.subjectPrefix, options);
    return log;
  }

  /** The subject this log appends the conversation's commits to (of `kind`, default its own). */
  subject(ref: ConversationRef, kind: CommitKind = this.kind): string {
    return conversationSubject(this.subjectPrefix, ref, kind);
  }

  /** Every commit of the conversation (in the current layout). */
  filter(ref: ConversationRef): string {
    return conversationFilter(this.subjectPrefix, ref);
  }

  /**
   * Validates the drafts, places them after `expected`, and appends them as ONE commit.
   * Throws ConflictError when the tail moved, a retryable LogError on transient failures
   * (retry with the same commitId), and LogError('invalid_event') before writing anything
   * when an event is invalid. A commit refused as a conflict is looked for right after
   * `expected` (one get): found there under this `commitId`, it was stored by an earlier try
   * whose answer was lost, and is returned as stored.
   */
  async append(ref: ConversationRef, drafts: readonly EventDraft[], options: AppendOptions): Promise<StoredCommit> {
    const subject = this.subject(ref);
    const events = placeEvents(ref, drafts, options.expected.lastSeq);
    const commitId = options.commitId ?? newId();
    const encoded = encodeCommit(commitId, ref, events);
    if (encoded.data.length > this.#maxPayload) {
      throw new LogError(
        LogErrorCode.TooLarge,
        `commit of ${encoded.data.length} bytes exceeds the ${this.#maxPayload}-byte limit; bound tool output or split the commit`,
      );
    }
    const headers = encoded.headers;
    headers.set(MSG_ID_HEADER, commitId);
    headers.set(
      'Nats-Expected-Last-Subject-Sequence',
      String(await this.#legacy.expectedOnFilter(ref, this.filter(ref), options.expected.streamSeq)),
    );
    headers.set(EXPECTED_SUBJECT_HEADER, this.filter(ref));
    // the span appending (a request, a step, a tool batch…) when this process traces
    const traceparent = activeTraceparent();
    if (traceparent !== undefined) headers.set(CommitHeader.Traceparent, traceparent);
    this.options.beforePublish?.();
    options.beforePublish?.();
    const answer = await this.#publisher.publish(subject, encoded.data, headers);
    let streamSeq: number;
    if (answer.ok) streamSeq = answer.seq;
    else {
      const error = classifyPublishAnswer(answer, subject);
      // a repeat of a commit stored already (its first answer was lost) is refused as a conflict,
      // the stream checking the expected sequence before its duplicate window: the commit is ours
      // when it is the message right after the one expected
      const stored =
        isConflict(error) && options.commitId !== undefined
          ? await this.#storedAfter(ref, options.expected.streamSeq, commitId)
          : undefined;
      if (stored === undefined) throw error;
      streamSeq = stored;
    }
    this.options.onAppended?.(ref, { subject, seq: streamSeq, data: encoded.data, headers });
    return {
      streamSeq,
      id: commitId,
      tenant: ref.tenant,
      conversation: ref.conversation,
      firstSeq: events[0]!.seq,
      lastSeq: events[events.length - 1]!.seq,
      events,
    };
  }

  /**
   * Removes every commit of the conversation from the stream (both layouts), returning how many.
   * Takes a credential that may purge the stream (the projector's, on the gateway's request).
   */
  async purge(ref: ConversationRef): Promise<number> {
    let purged = (await this.jsm.streams.purge(this.streamName, { filter: this.filter(ref) })).purged;
    if (this.#legacy.present)
      purged += (await this.jsm.streams.purge(this.streamName, { filter: this.#legacy.subject(ref) })).purged;
    this.#legacy.forget(ref);
    return purged;
  }

  /**
   * The stream sequence of the subject's last message (0 when none), without reading its body:
   * enough to tell whether a delivered commit is still the tail.
   */
  async lastStreamSeq(ref: ConversationRef): Promise<number> {
    return (await this.#messages.last(ref))?.seq ?? 0;
  }

  /** The conversation's current tail (EMPTY_TAIL for a conversation with no commits). */
  tail(ref: ConversationRef): Promise<Tail> {
    return conversationTail(this.#messages, ref, this.options);
  }

  /**
   * The stream sequence of the conversation's first commit (undefined when it has none), from
   * one direct get of its headers: a log whose first commit moved lost its beginning (a purge, or
   * the stream's retention limits).
   */
  async firstCommitSeq(ref: ConversationRef): Promise<number | undefined> {
    return (await nextPlaced(this.#messages, ref, 1, Number.MAX_SAFE_INTEGER))?.seq;
  }

  /**
   * The stream sequence of the commit holding event `seq` (binary search over direct gets,
   * O(log n) round trips), or undefined when no commit holds it.
   */
  async locate(ref: ConversationRef, seq: number, knownTail?: Tail): Promise<number | undefined> {
    const tail = knownTail ?? (await this.tail(ref));
    return await locateCommit(this.#messages, ref, seq, tail);
  }

  /** Reads the commits holding events after `afterSeq`, up to the tail as of the call. */
  async *read(ref: ConversationRef, options: ReadOptions = {}): AsyncGenerator<StoredCommit> {
    const plan = await this.#plan(ref, options);
    if (plan) yield* scanCommits(this.#messages, ref, plan, this.options);
  }

  /**
   * What `read` yields, handed to `visit` one commit at a time: the same commits, checked the same
   * way, without an async generator between the consumer and the caller (each level costs a few
   * promise turns per commit, a tenth of a long read's time). A visitor returning `false` stops
   * the read.
   */
  async forEachCommit(
    ref: ConversationRef,
    options: ReadOptions,
    visit: (commit: StoredCommit) => void | boolean,
  ): Promise<void> {
    const plan = await this.#plan(ref, options);
    if (!plan || plan.signal?.aborted) return;
    const accept = commitAcceptor(ref, plan, this.options);
    // a batch at a time, each handled synchronously: no promise turn per commit
    for await (const messages of this.#messages.batches(ref, plan.start, plan.until ?? 0, plan.expected, plan.signal)) {
      for (const message of messages) {
        const commit = accept(message);
        // `false` from the visitor ends the read there
        if (commit && visit(commit) === false) return;
      }
    }
  }

  /** All events after `afterSeq`, up to the tail as of the call. */
  async readEvents(ref: ConversationRef, options: ReadOptions = {}): Promise<{ events: Event[]; tail: Tail }> {
    const afterSeq = options.afterSeq ?? 0;
    const events: Event[] = [];
    let tail: Tail = { streamSeq: 0, lastSeq: afterSeq };
    await this.forEachCommit(ref, options, (commit) => {
      for (const event of commit.events) if (event.seq > afterSeq) events.push(event);
      tail = { streamSeq: commit.streamSeq, lastSeq: commit.lastSeq };
    });
    return { events, tail };
  }

  /** Where a bounded read starts and stops, and how it reads (undefined: nothing to read). */
  async #plan(ref: ConversationRef, options: ReadOptions): Promise<ScanPlan | undefined> {
    const afterSeq = options.afterSeq ?? 0;
    const common = { afterSeq, policy: options.invalidPolicy, signal: options.signal };
    if (options.untilStreamSeq !== undefined && options.afterStreamSeq !== undefined) {
      if (options.untilStreamSeq <= options.afterStreamSeq) return undefined;
      // a catch-up from a known position: usually a commit or two
      const expected = options.expectedMessages ?? (options.afterStreamSeq > 0 ? 1 : undefined);
      return { ...common, start: options.afterStreamSeq + 1, until: options.untilStreamSeq, expected };
    }
    const tail = options.until ?? (await this.tail(ref));
    if (tail.streamSeq === 0 || tail.lastSeq <= afterSeq) return undefined;
    const start =
      options.afterStreamSeq !== undefined
        ? options.afterStreamSeq + 1
        : afterSeq === 0
          ? 1
          : await this.locate(ref, afterSeq + 1, tail);
    if (start === undefined) return undefined;
    return { ...common, start, until: tail.streamSeq, expected: options.expectedMessages ?? tail.lastSeq - afterSeq };
  }

  /**
   * Follows the conversation live: the commits after `afterSeq`, then every new commit as
   * it lands, until the signal aborts, each once and in order. No consumer: a core subscription
   * on the conversation's subject wakes the follower and direct-get batches read the stream from
   * the last commit yielded (see followSubject), with a backstop poll and a look after every
   * reconnect, so it survives server restarts. The connection's user must be allowed to subscribe
   * to the subject (LogError('forbidden') otherwise).
   */
  async *follow(ref: ConversationRef, options: ReadOptions = {}): AsyncGenerator<StoredCommit> {
    const afterSeq = options.afterSeq ?? 0;
    let start = 1;
    if (options.afterStreamSeq !== undefined) start = options.afterStreamSeq + 1;
    else if (afterSeq > 0) {
      const tail = await this.tail(ref);
      const located = await this.locate(ref, afterSeq + 1, tail);
      start = located ?? tail.streamSeq + 1;
    }
    yield* scanCommits(
      this.#messages,
      ref,
      {
        start,
        until: undefined,
        afterSeq,
        policy: options.invalidPolicy,
        signal: options.signal,
        expected: undefined,
      },
      this.options,
    );
  }

  /** The stream sequence of the conversation's message right after `expected` when it is commit `commitId` (its `Nats-Msg-Id`). */
  async #storedAfter(ref: ConversationRef, expected: number, commitId: string): Promise<number | undefined> {
    const next = await this.#gets.get({ seq: expected + 1, next_by_subj: this.filter(ref) });
    return next?.headers?.get(MSG_ID_HEADER) === commitId ? next.seq : undefined;
  }
}
