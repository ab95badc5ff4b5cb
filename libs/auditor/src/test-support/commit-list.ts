import { Event, newId, type EventDraft } from '@flotilla/events';
import type { ConversationRef, StoredCommit } from '@flotilla/log';

/** Builds StoredCommits by hand, as the log would place them (validated events, contiguous seqs). */
export class CommitList {
  readonly commits: StoredCommit[] = [];
  #lastSeq = 0;
  #streamSeq = 0;

  constructor(readonly ref: ConversationRef = { tenant: 'acme', conversation: 'c1' }) {}

  /** Appends one commit; `place` overrides what the log would assign (to build broken logs). */
  add(drafts: readonly EventDraft[], place: { firstSeq?: number; streamSeq?: number; id?: string } = {}): StoredCommit {
    const firstSeq = place.firstSeq ?? this.#lastSeq + 1;
    const events = drafts.map((draft, index) => Event.parse({ ...draft, seq: firstSeq + index }));
    this.#streamSeq = place.streamSeq ?? this.#streamSeq + 3;
    const commit: StoredCommit = {
      streamSeq: this.#streamSeq,
      id: place.id ?? newId(),
      tenant: this.ref.tenant,
      conversation: this.ref.conversation,
      firstSeq,
      lastSeq: firstSeq + events.length - 1,
      events,
    };
    this.#lastSeq = commit.lastSeq;
    this.commits.push(commit);
    return commit;
  }

  addAll(commits: readonly (readonly EventDraft[])[]): this {
    for (const drafts of commits) this.add(drafts);
    return this;
  }
}
