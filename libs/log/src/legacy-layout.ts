import { legacyCommitSubjects } from '@flotilla/bus';
import { legacyConversationSubject, type ConversationRef } from './conversation-ref.js';
import { ConflictError } from './errors.js';
import type { StreamGets } from './stream-gets.js';

/** Conversations whose legacy-layout tail a log remembers (those commits never change). */
const LEGACY_TAILS_KEPT = 10_000;

/**
 * Commits written before they carried their kind, on `<prefix>.<tenant>.<conversation>`: a
 * conversation's legacy commits are read as the start of its log, and its log is continued in the
 * current layout. Whether the stream holds commits of the legacy layout is looked up once, when
 * the log opens; if so, the stream sequence of each conversation's last legacy commit (0: none),
 * as read once (they are never written again).
 */
export class LegacyLayout {
  readonly #tails = new Map<string, number>();

  private constructor(
    readonly gets: StreamGets,
    readonly subjectPrefix: string,
    /** Whether the stream holds commits of the legacy layout. */
    readonly present: boolean,
  ) {}

  /** Looks whether the stream holds any commit of the legacy layout. */
  static async detect(gets: StreamGets, subjectPrefix: string): Promise<LegacyLayout> {
    const present = (await gets.get({ last_by_subj: legacyCommitSubjects(subjectPrefix) })) !== null;
    return new LegacyLayout(gets, subjectPrefix, present);
  }

  /** The conversation's subject in the legacy layout. */
  subject(ref: ConversationRef): string {
    return legacyConversationSubject(this.subjectPrefix, ref);
  }

  /** The stream sequence of the conversation's last legacy-layout commit (0: none; always 0 on a stream without any). */
  async tail(ref: ConversationRef): Promise<number> {
    if (!this.present) return 0;
    const key = `${ref.tenant}.${ref.conversation}`;
    const known = this.#tails.get(key);
    if (known !== undefined) return known;
    const last = (await this.gets.get({ last_by_subj: this.subject(ref) }))?.seq ?? 0;
    if (this.#tails.size >= LEGACY_TAILS_KEPT) this.#tails.delete(this.#tails.keys().next().value!);
    this.#tails.set(key, last);
    return last;
  }

  /** Forgets the conversation's legacy tail (its commits were purged). */
  forget(ref: ConversationRef): void {
    this.#tails.delete(`${ref.tenant}.${ref.conversation}`);
  }

  /**
   * The expected last sequence of the conversation's current-layout subjects (`filter`) for an
   * append after `streamSeq`: the same, unless the conversation's tail is its last legacy commit
   * (then none of its commits is in the current layout yet: 0). A tail older than that is stale:
   * a conflict.
   */
  async expectedOnFilter(ref: ConversationRef, filter: string, streamSeq: number): Promise<number> {
    const legacyLast = await this.tail(ref);
    if (streamSeq > legacyLast) return streamSeq;
    if (streamSeq === legacyLast) return 0;
    throw new ConflictError(
      `${filter} moved on since it was read: the append expects #${streamSeq}, but the conversation's legacy log goes on to #${legacyLast}`,
      legacyLast,
    );
  }
}
