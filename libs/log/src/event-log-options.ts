import type { ProtocolIssue } from '@flotilla/events';
import type { RawMessage } from './codec.js';
import type { ConversationRef } from './conversation-ref.js';
import type { Tail } from './stored-commit.js';
import type { EventStreamOptions } from './stream-setup.js';

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
  /**
   * Called right before the commit is published, in the same turn of the event loop: what it
   * sends on the connection (a model call's last token deltas) goes out in the commit's write.
   */
  readonly beforePublish?: () => void;
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
