import type { ConversationRef, EventLog, StoredCommit } from '@flotilla/log';
import { setRecent } from '@flotilla/runtime';
import { copyState, foldState, initialState, type ConversationState } from '@flotilla/state';

type Known = { readonly lastSeq: number; readonly state: ConversationState };

/**
 * Each conversation's state (libs/state's fold: status, actions waiting) after the last commit
 * this process handled, so that a commit's status changes are told apart from statuses set again.
 * A commit that does not continue the kept state (the first one seen, one handled by another
 * instance in between, a redelivery) is decided on from the log read up to it.
 */
export class ConversationStates {
  readonly #known = new Map<string, Known>();

  constructor(
    private readonly log: EventLog,
    private readonly capacity = 10_000,
  ) {}

  /** The conversation's state before `commit`. */
  async before(ref: ConversationRef, commit: StoredCommit): Promise<ConversationState> {
    const known = this.#known.get(key(ref));
    if (known && known.lastSeq === commit.firstSeq - 1) return copyState(known.state);
    const state = initialState();
    if (commit.streamSeq > 1) {
      await this.log.forEachCommit(ref, { afterStreamSeq: 0, untilStreamSeq: commit.streamSeq - 1 }, (earlier) => {
        for (const event of earlier.events) if (event.seq < commit.firstSeq) foldState(state, event);
      });
    }
    return state;
  }

  /** Keep the state after `commit`. */
  remember(ref: ConversationRef, commit: StoredCommit, state: ConversationState): void {
    setRecent(this.#known, key(ref), { lastSeq: commit.lastSeq, state }, this.capacity);
  }

  /** Folds a commit into the kept state when it continues it (a commit with no status change); else forgets the conversation. */
  advance(ref: ConversationRef, commit: StoredCommit): void {
    const known = this.#known.get(key(ref));
    if (!known || known.lastSeq !== commit.firstSeq - 1) {
      this.forget(ref);
      return;
    }
    const state = copyState(known.state);
    for (const event of commit.events) foldState(state, event);
    this.remember(ref, commit, state);
  }

  forget(ref: ConversationRef): void {
    this.#known.delete(key(ref));
  }
}

function key(ref: ConversationRef): string {
  return `${ref.tenant}.${ref.conversation}`;
}
