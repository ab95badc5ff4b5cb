import type { NatsConnection } from '@nats-io/transport-node';
import type { RawMessage } from './codec.js';
import { conversationFilter, type ConversationRef } from './conversation-ref.js';
import { readSubjectBatches, readSubjectRange, type SubjectRange } from './direct-batch.js';
import type { EventLogOptions } from './event-log-options.js';
import type { LegacyLayout } from './legacy-layout.js';
import { followSubject } from './live-follow.js';
import type { StreamGets } from './stream-gets.js';

/**
 * A conversation's messages on the stream, whichever layout holds them: its last one, its next
 * one at or after a stream sequence, a bounded range (a message or a batch at a time) and a live
 * follow. A conversation begun in the legacy layout is read there first, up to its last legacy
 * commit, then on its current-layout subjects. Nothing is decoded here: the log checks what it
 * reads (see commit-scan).
 */
export class ConversationMessages {
  constructor(
    readonly nc: NatsConnection,
    readonly gets: StreamGets,
    readonly legacy: LegacyLayout,
    readonly subjectPrefix: string,
    private readonly options: Pick<EventLogOptions, 'followBackstopMs'>,
  ) {}

  /** Every commit of the conversation (in the current layout). */
  filter(ref: ConversationRef): string {
    return conversationFilter(this.subjectPrefix, ref);
  }

  /** The conversation's last message (either layout), or null when it has none. */
  async last(ref: ConversationRef): Promise<RawMessage | null> {
    const last = await this.gets.get({ last_by_subj: this.filter(ref) });
    if (last || !this.legacy.present) return last;
    return await this.gets.get({ last_by_subj: this.legacy.subject(ref) });
  }

  /** The conversation's next message at or after `seq` (either layout), or null. */
  async next(ref: ConversationRef, seq: number): Promise<RawMessage | null> {
    const legacyLast = this.legacy.present ? await this.legacy.tail(ref) : 0;
    if (legacyLast >= seq) {
      const legacy = await this.gets.get({ seq, next_by_subj: this.legacy.subject(ref) });
      if (legacy) return legacy;
    }
    return await this.gets.get({ seq: Math.max(seq, legacyLast + 1), next_by_subj: this.filter(ref) });
  }

  /**
   * The conversation's messages from `start` (to `until`, or live). A bounded read pages through
   * direct-get batches: no consumer is created, however long the read and however many readers.
   * A conversation begun in the legacy layout is read there first, up to its last legacy commit.
   */
  messages(
    ref: ConversationRef,
    start: number,
    until: number | undefined,
    expected: number | undefined,
    signal?: AbortSignal,
  ): AsyncGenerator<RawMessage> {
    if (this.legacy.present) return this.#messagesAcrossLayouts(ref, start, until, expected, signal);
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
    const legacyLast = await this.legacy.tail(ref);
    if (legacyLast >= from) {
      yield* readSubjectRange(
        this.nc,
        this.#range(this.legacy.subject(ref), from, Math.min(until ?? legacyLast, legacyLast), expected, signal),
      );
      from = legacyLast + 1;
    }
    if (until === undefined) yield* this.#live(this.filter(ref), from, signal);
    else if (from <= until)
      yield* readSubjectRange(this.nc, this.#range(this.filter(ref), from, until, expected, signal));
  }

  /** A bounded read's messages a batch at a time. */
  async *batches(
    ref: ConversationRef,
    start: number,
    until: number,
    expected: number | undefined,
    signal?: AbortSignal,
  ): AsyncGenerator<RawMessage[]> {
    let from = start;
    const legacyLast = this.legacy.present ? await this.legacy.tail(ref) : 0;
    if (legacyLast >= from) {
      yield* readSubjectBatches(
        this.nc,
        this.#range(this.legacy.subject(ref), from, Math.min(until, legacyLast), expected, signal),
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
    const leaderGet = this.gets.leaderGet(subject);
    return { stream: this.gets.streamName, subject, from, until, expected, signal, leaderGet };
  }

  /**
   * The subject's messages from `start`, live, until the signal aborts: woken by a core
   * subscription on the subject, read with direct-get batches (no consumer, however many follow).
   */
  async *#live(subject: string, start: number, signal?: AbortSignal): AsyncGenerator<RawMessage> {
    const follow = {
      stream: this.gets.streamName,
      subject,
      from: start,
      signal,
      leaderGet: this.gets.leaderGet(subject),
      backstopMs: this.options.followBackstopMs,
    };
    for await (const messages of followSubject(this.nc, follow)) yield* messages;
  }
}
