import {
  CommitHeader,
  Event,
  ProtocolErrorCode,
  describeIssues,
  isValidEvent,
  newId,
  type EventDraft,
  type ProtocolIssue,
} from '@flotilla/events';
import { activeTraceparent } from '@flotilla/tracing';
import type { JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { decodeCommit, encodeCommit, placementOf, type RawMessage } from './codec.js';
import { commitKindOf, legacyCommitSubjects, type CommitKind } from '@flotilla/bus';
import {
  conversationFilter,
  conversationSubject,
  DEFAULT_SUBJECT_PREFIX,
  legacyConversationSubject,
  type ConversationRef,
} from './conversation-ref.js';
import { readSubjectBatches, readSubjectRange, type SubjectRange } from './direct-batch.js';
import { ConflictError, isConflict, LogError, LogErrorCode } from './errors.js';
import { JetStreamPublisher } from './jetstream-publisher.js';
import { followSubject } from './live-follow.js';
import { classifyPublishAnswer } from './publish-errors.js';
import { EMPTY_TAIL, type StoredCommit, type Tail } from './stored-commit.js';
import { connectManager, DEFAULT_STREAM_NAME, ensureEventStream, type EventStreamOptions } from './stream-setup.js';

/** A message on a conversation subject that is not a valid next commit. */
export type InvalidMessageReport = {
  readonly subject: string;
  readonly streamSeq: number;
  readonly reason: string;
  readonly issues: readonly ProtocolIssue[];
};

/** What a reader does with an invalid message: skip it (after reporting) or stop with an error. */
export type InvalidMessagePolicy = 'skip' | 'stop';

export type EventLogOptions = EventStreamOptions & {
  /** Called for every foreign or corrupt message a reader meets. */
  readonly onInvalid?: (report: InvalidMessageReport) => void;
  readonly invalidPolicy?: InvalidMessagePolicy;
  /** Publish acknowledgement timeout. Default 5 s. */
  readonly appendTimeoutMs?: number;
  /**
   * Called right before each append is published, in the same turn: a caller holding other
   * messages for this connection (a consumer's acks) sends them now, in the same socket write.
   */
  readonly beforePublish?: () => void;
  /** How long a follower goes, at most, without looking at the stream when nothing woke it. Default 5 s. */
  readonly followBackstopMs?: number;
  /**
   * The service appending (libs/bus WRITER_KINDS): its commits' kind, the last token of their
   * subject, which its NATS user may publish. Anyone else appends `user` commits.
   */
  readonly writer?: string;
  /** Told of every commit this log appended, as stored (a group carrying on after its own commits: libs/runtime OwnCommits). */
  readonly onAppended?: (ref: ConversationRef, message: RawMessage) => void;
};

export type AppendOptions = {
  /** The tail the writer read and decided on (optimistic concurrency). */
  readonly expected: Tail;
  /**
   * Stable across retries of the same commit: a retry of a commit already stored (its answer lost)
   * returns the stored commit instead of a conflict, and stores nothing.
   */
  readonly commitId?: string;
};

export type ReadOptions = {
  /** Only commits holding events after this seq. Default 0 (from the start). */
  readonly afterSeq?: number;
  /**
   * The stream sequence of the commit holding `afterSeq`, when the reader knows it (a cache
   * does): reading then starts right after it, without locating `afterSeq`.
   */
  readonly afterStreamSeq?: number;
  /** Read up to this tail instead of fetching the current one. */
  readonly until?: Tail;
  /**
   * Read up to this stream sequence (the subject's last message as the caller saw it) without
   * fetching the tail; with `afterStreamSeq`, a catch-up reads only what lies between.
   */
  readonly untilStreamSeq?: number;
  /**
   * About how many of the subject's messages the read covers, when the caller can tell better than
   * the log: the first direct-get batch asks for that many (later ones for full batches).
   */
  readonly expectedMessages?: number;
  readonly signal?: AbortSignal;
  readonly invalidPolicy?: InvalidMessagePolicy;
};

/** A bounded or live read, resolved: where it starts and stops, and about how many messages it covers. */
type ScanPlan = {
  readonly start: number;
  readonly until: number | undefined;
  readonly afterSeq: number;
  readonly policy: InvalidMessagePolicy | undefined;
  readonly signal: AbortSignal | undefined;
  readonly expected: number | undefined;
};

const MSG_ID_HEADER = 'Nats-Msg-Id';
const EXPECTED_SUBJECT_HEADER = 'Nats-Expected-Last-Subject-Sequence-Subject';
/** Conversations whose legacy-layout tail a log remembers (those commits never change). */
const LEGACY_TAILS_KEPT = 10_000;

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
  /**
   * Reads that decide go to the stream's leader (message gets), not to any replica (direct gets):
   * a replica can be behind (one catching up after a restart answers with an old tail), and a
   * decision made on a stale tail could miss that an action started. Set for a replicated stream.
   */
  #fromLeader = false;
  /**
   * Whether the stream holds commits of the legacy layout; if so, the stream sequence of each
   * conversation's last legacy commit (0: none), as read once (they are never written again).
   */
  #legacy = false;
  readonly #legacyTails = new Map<string, number>();

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
    log.#fromLeader = stream.replicas > 1;
    log.#legacy = (await log.#direct({ last_by_subj: legacyCommitSubjects(log.subjectPrefix) })) !== null;
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
      String(await this.#expectedOnFilter(ref, options.expected.streamSeq)),
    );
    headers.set(EXPECTED_SUBJECT_HEADER, this.filter(ref));
    // the span appending (a request, a step, a tool batch…) when this process traces
    const traceparent = activeTraceparent();
    if (traceparent !== undefined) headers.set(CommitHeader.Traceparent, traceparent);
    this.options.beforePublish?.();
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
    if (this.#legacy)
      purged += (
        await this.jsm.streams.purge(this.streamName, { filter: legacyConversationSubject(this.subjectPrefix, ref) })
      ).purged;
    this.#legacyTails.delete(`${ref.tenant}.${ref.conversation}`);
    return purged;
  }

  /**
   * The stream sequence of the subject's last message (0 when none), without reading its body:
   * enough to tell whether a delivered commit is still the tail.
   */
  async lastStreamSeq(ref: ConversationRef): Promise<number> {
    return (await this.#last(ref))?.seq ?? 0;
  }

  /** The conversation's current tail (EMPTY_TAIL for a conversation with no commits). */
  async tail(ref: ConversationRef): Promise<Tail> {
    const last = await this.#last(ref);
    if (!last) return EMPTY_TAIL;
    const subject = last.subject;
    const decoded = decodeCommit(last, ref);
    if (decoded.ok) return { streamSeq: last.seq, lastSeq: decoded.commit.lastSeq };
    // The last message is foreign or corrupt: appends go after it, events continue the last valid commit.
    this.#report(subject, last.seq, decoded.reason, decoded.error?.issues ?? [], 'skip', decoded.error?.code);
    let lastSeq = 0;
    for await (const commit of this.#scan(ref, {
      start: 1,
      until: last.seq,
      afterSeq: 0,
      policy: 'skip',
      signal: undefined,
      expected: undefined,
    }))
      lastSeq = commit.lastSeq;
    return { streamSeq: last.seq, lastSeq };
  }

  /**
   * The stream sequence of the conversation's first commit (undefined when it has none), from
   * one direct get of its headers: a log whose first commit moved lost its beginning (a purge, or
   * the stream's retention limits).
   */
  async firstCommitSeq(ref: ConversationRef): Promise<number | undefined> {
    return (await this.#nextPlaced(ref, 1, Number.MAX_SAFE_INTEGER))?.seq;
  }

  /**
   * The stream sequence of the commit holding event `seq` (binary search over direct gets,
   * O(log n) round trips), or undefined when no commit holds it.
   */
  async locate(ref: ConversationRef, seq: number, knownTail?: Tail): Promise<number | undefined> {
    const tail = knownTail ?? (await this.tail(ref));
    if (seq < 1 || seq > tail.lastSeq) return undefined;
    const first = await this.#nextPlaced(ref, 1, tail.streamSeq);
    if (!first) return undefined;
    let low = first.seq;
    let high = tail.streamSeq;
    while (low < high) {
      const middle = Math.ceil((low + high) / 2);
      const probe = await this.#nextPlaced(ref, middle, high);
      if (probe && probe.firstSeq <= seq) low = probe.seq;
      else high = middle - 1;
    }
    return low;
  }

  /** Reads the commits holding events after `afterSeq`, up to the tail as of the call. */
  async *read(ref: ConversationRef, options: ReadOptions = {}): AsyncGenerator<StoredCommit> {
    const plan = await this.#plan(ref, options);
    if (plan) yield* this.#scan(ref, plan);
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
    const accept = this.#acceptor(ref, plan);
    // a batch at a time, each handled synchronously: no promise turn per commit
    for await (const messages of this.#batches(ref, plan.start, plan.until ?? 0, plan.expected, plan.signal)) {
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
    yield* this.#scan(ref, {
      start,
      until: undefined,
      afterSeq,
      policy: options.invalidPolicy,
      signal: options.signal,
      expected: undefined,
    });
  }

  async *#scan(ref: ConversationRef, plan: ScanPlan): AsyncGenerator<StoredCommit> {
    if (plan.signal?.aborted) return;
    const accept = this.#acceptor(ref, plan);
    for await (const message of this.#messages(ref, plan.start, plan.until, plan.expected, plan.signal)) {
      const commit = accept(message);
      if (commit) yield commit;
    }
  }

  /**
   * Decodes a read's messages in order: the commits after `afterSeq` that continue one another.
   * Foreign and corrupt messages, and commits that leave a gap, are reported (and skipped or
   * thrown, by policy).
   */
  #acceptor(ref: ConversationRef, plan: ScanPlan): (message: RawMessage) => StoredCommit | undefined {
    const { afterSeq, policy } = plan;
    let expectedFirst: number | undefined;
    return (message) => {
      const subject = message.subject;
      const decoded = decodeCommit(message, ref);
      if (!decoded.ok) {
        this.#report(subject, message.seq, decoded.reason, decoded.error?.issues ?? [], policy, decoded.error?.code);
        return undefined;
      }
      const commit = decoded.commit;
      if (commit.lastSeq <= afterSeq) return undefined; // before the requested position
      if (
        expectedFirst === undefined ? commit.firstSeq > afterSeq + 1 && afterSeq > 0 : commit.firstSeq !== expectedFirst
      ) {
        const wanted = expectedFirst ?? afterSeq + 1;
        this.#report(subject, message.seq, `commit starts at seq ${commit.firstSeq}, expected ${wanted}`, [], policy);
        return undefined;
      }
      expectedFirst = commit.lastSeq + 1;
      return commit;
    };
  }

  /**
   * The conversation's messages from `start` (to `until`, or live). A bounded read pages through
   * direct-get batches: no consumer is created, however long the read and however many readers.
   * A conversation begun in the legacy layout is read there first, up to its last legacy commit.
   */
  #messages(
    ref: ConversationRef,
    start: number,
    until: number | undefined,
    expected: number | undefined,
    signal?: AbortSignal,
  ): AsyncGenerator<RawMessage> {
    if (this.#legacy) return this.#messagesAcrossLayouts(ref, start, until, expected, signal);
    if (until === undefined) return this.#live(this.filter(ref), start, signal);
    return readSubjectRange(this.nc, this.#range(this.filter(ref), start, until, expected, signal));
  }

  async *#messagesAcrossLayouts(
    ref: ConversationRef,
    start: number,
    until: number | undefined,
    expected: number | undefined,
    signal?: AbortSignal,
  ): AsyncGenerator<RawMessage> {
    let from = start;
    const legacyLast = await this.#legacyTail(ref);
    if (legacyLast >= from) {
      yield* readSubjectRange(
        this.nc,
        this.#range(
          legacyConversationSubject(this.subjectPrefix, ref),
          from,
          Math.min(until ?? legacyLast, legacyLast),
          expected,
          signal,
        ),
      );
      from = legacyLast + 1;
    }
    if (until === undefined) yield* this.#live(this.filter(ref), from, signal);
    else if (from <= until)
      yield* readSubjectRange(this.nc, this.#range(this.filter(ref), from, until, expected, signal));
  }

  /** A bounded read's messages a batch at a time. */
  async *#batches(
    ref: ConversationRef,
    start: number,
    until: number,
    expected: number | undefined,
    signal?: AbortSignal,
  ): AsyncGenerator<RawMessage[]> {
    let from = start;
    const legacyLast = this.#legacy ? await this.#legacyTail(ref) : 0;
    if (legacyLast >= from) {
      yield* readSubjectBatches(
        this.nc,
        this.#range(
          legacyConversationSubject(this.subjectPrefix, ref),
          from,
          Math.min(until, legacyLast),
          expected,
          signal,
        ),
      );
      from = legacyLast + 1;
    }
    if (from <= until) yield* readSubjectBatches(this.nc, this.#range(this.filter(ref), from, until, expected, signal));
  }

  #range(
    subject: string,
    from: number,
    until: number,
    expected: number | undefined,
    signal: AbortSignal | undefined,
  ): SubjectRange {
    // a replicated stream's batch may come from a replica that is behind: the leader answers the rest
    const leaderGet = this.#fromLeader
      ? (seq: number): Promise<RawMessage | null> => this.#direct({ seq, next_by_subj: subject })
      : undefined;
    return { stream: this.streamName, subject, from, until, expected, signal, leaderGet };
  }

  /**
   * The subject's messages from `start`, live, until the signal aborts: woken by a core
   * subscription on the subject, read with direct-get batches (no consumer, however many follow).
   */
  async *#live(subject: string, start: number, signal?: AbortSignal): AsyncGenerator<RawMessage> {
    const leaderGet = this.#fromLeader
      ? (seq: number): Promise<RawMessage | null> => this.#direct({ seq, next_by_subj: subject })
      : undefined;
    const follow = {
      stream: this.streamName,
      subject,
      from: start,
      signal,
      leaderGet,
      backstopMs: this.options.followBackstopMs,
    };
    for await (const messages of followSubject(this.nc, follow)) yield* messages;
  }

  #report(
    subject: string,
    streamSeq: number,
    reason: string,
    issues: readonly ProtocolIssue[],
    policy: InvalidMessagePolicy | undefined,
    code?: string,
  ): void {
    const report = { subject, streamSeq, reason, issues };
    this.options.onInvalid?.(report);
    if (code === ProtocolErrorCode.UnsupportedVersion) {
      // Never skip what a newer writer wrote: that would silently lose events.
      throw new LogError(LogErrorCode.UnsupportedVersion, `${subject} #${streamSeq}: ${reason}`, { issues });
    }
    if ((policy ?? this.options.invalidPolicy ?? 'skip') === 'stop') {
      throw new LogError(LogErrorCode.CorruptCommit, `invalid message at ${subject} #${streamSeq}: ${reason}`, {
        issues,
      });
    }
  }

  async #direct(query: { last_by_subj: string } | { seq: number; next_by_subj: string }): Promise<RawMessage | null> {
    try {
      const message = this.#fromLeader
        ? await this.jsm.streams.getMessage(this.streamName, query)
        : await this.jsm.direct.getMessage(this.streamName, query);
      return message && { subject: message.subject, seq: message.seq, data: message.data, headers: message.header };
    } catch (error) {
      throw new LogError(
        LogErrorCode.Transient,
        `${this.#fromLeader ? 'message' : 'direct'} get on ${this.streamName} failed: ${(error as Error).message}`,
        { cause: error },
      );
    }
  }

  /** The conversation's last message (either layout), or null when it has none. */
  async #last(ref: ConversationRef): Promise<RawMessage | null> {
    const last = await this.#direct({ last_by_subj: this.filter(ref) });
    if (last || !this.#legacy) return last;
    return await this.#direct({ last_by_subj: legacyConversationSubject(this.subjectPrefix, ref) });
  }

  /** The conversation's next message at or after `seq` (either layout), or null. */
  async #next(ref: ConversationRef, seq: number): Promise<RawMessage | null> {
    const legacyLast = this.#legacy ? await this.#legacyTail(ref) : 0;
    if (legacyLast >= seq) {
      const legacy = await this.#direct({ seq, next_by_subj: legacyConversationSubject(this.subjectPrefix, ref) });
      if (legacy) return legacy;
    }
    return await this.#direct({ seq: Math.max(seq, legacyLast + 1), next_by_subj: this.filter(ref) });
  }

  /** The stream sequence of the conversation's last legacy-layout commit (0: none; always 0 on a stream without any). */
  async #legacyTail(ref: ConversationRef): Promise<number> {
    if (!this.#legacy) return 0;
    const key = `${ref.tenant}.${ref.conversation}`;
    const known = this.#legacyTails.get(key);
    if (known !== undefined) return known;
    const last = (await this.#direct({ last_by_subj: legacyConversationSubject(this.subjectPrefix, ref) }))?.seq ?? 0;
    if (this.#legacyTails.size >= LEGACY_TAILS_KEPT) this.#legacyTails.delete(this.#legacyTails.keys().next().value!);
    this.#legacyTails.set(key, last);
    return last;
  }

  /**
   * The expected last sequence of the conversation's current-layout subjects for an append after
   * `streamSeq`: the same, unless the conversation's tail is its last legacy commit (then none of
   * its commits is in the current layout yet: 0). A tail older than that is stale: a conflict.
   */
  async #expectedOnFilter(ref: ConversationRef, streamSeq: number): Promise<number> {
    const legacyLast = await this.#legacyTail(ref);
    if (streamSeq > legacyLast) return streamSeq;
    if (streamSeq === legacyLast) return 0;
    throw new ConflictError(
      `${this.filter(ref)} moved on since it was read: the append expects #${streamSeq}, but the conversation's legacy log goes on to #${legacyLast}`,
      legacyLast,
    );
  }

  /** The stream sequence of the conversation's message right after `expected` when it is commit `commitId` (its `Nats-Msg-Id`). */
  async #storedAfter(ref: ConversationRef, expected: number, commitId: string): Promise<number | undefined> {
    const next = await this.#direct({ seq: expected + 1, next_by_subj: this.filter(ref) });
    return next?.headers?.get(MSG_ID_HEADER) === commitId ? next.seq : undefined;
  }

  /** The first commit at or after `from` (skipping foreign messages) up to `limit`. */
  async #nextPlaced(
    ref: ConversationRef,
    from: number,
    limit: number,
  ): Promise<{ seq: number; firstSeq: number } | undefined> {
    let cursor = from;
    while (cursor <= limit) {
      const message = await this.#next(ref, cursor);
      if (!message || message.seq > limit) return undefined;
      const placement = placementOf(message);
      if (placement) return { seq: message.seq, firstSeq: placement.firstSeq };
      cursor = message.seq + 1;
    }
    return undefined;
  }
}

/** Assigns seqs after `lastSeq` and validates every event, naming each bad field. */
export function placeEvents(ref: ConversationRef, drafts: readonly EventDraft[], lastSeq: number): Event[] {
  if (drafts.length === 0)
    throw new LogError(LogErrorCode.InvalidEvent, 'a commit needs at least one event', {
      issues: [{ path: 'events', message: 'empty' }],
    });
  const issues: ProtocolIssue[] = [];
  const events: Event[] = [];
  drafts.forEach((draft, index) => {
    const candidate = { ...draft, seq: lastSeq + 1 + index };
    // the compiled JSON Schema vouches for valid events quickly; zod names what is wrong
    if (isValidEvent(candidate)) {
      if (candidate.tenant !== ref.tenant)
        issues.push({ path: `events.${index}.tenant`, message: `must be "${ref.tenant}"` });
      if (candidate.conversation !== ref.conversation)
        issues.push({ path: `events.${index}.conversation`, message: `must be "${ref.conversation}"` });
      events.push(candidate);
      return;
    }
    const result = Event.safeParse(candidate);
    if (!result.success) {
      for (const issue of result.error.issues) {
        issues.push({
          path: `events.${index}.${issue.path.map(String).join('.') || '(root)'}`,
          message: issue.message,
        });
      }
      return;
    }
    if (result.data.tenant !== ref.tenant)
      issues.push({ path: `events.${index}.tenant`, message: `must be "${ref.tenant}"` });
    if (result.data.conversation !== ref.conversation) {
      issues.push({ path: `events.${index}.conversation`, message: `must be "${ref.conversation}"` });
    }
    events.push(result.data);
  });
  if (issues.length > 0) {
    throw new LogError(LogErrorCode.InvalidEvent, `refused to append invalid events: ${describeIssues(issues)}`, {
      issues,
    });
  }
  return events;
}
