import type { Event } from '@flotilla/events';

/** A commit as read back from the log, with its place in the stream. */
export type StoredCommit = {
  /** The JetStream stream sequence of the commit's message. */
  readonly streamSeq: number;
  readonly id: string;
  readonly tenant: string;
  readonly conversation: string;
  /** seq of the first and last event in the commit (contiguous). */
  readonly firstSeq: number;
  readonly lastSeq: number;
  readonly events: readonly Event[];
};

/** Where a conversation's log ends: the last commit's stream sequence and the last event seq (0 when empty). */
export type Tail = { readonly streamSeq: number; readonly lastSeq: number };

export const EMPTY_TAIL: Tail = Object.freeze({ streamSeq: 0, lastSeq: 0 });

export function tailOf(commit: StoredCommit): Tail {
  return { streamSeq: commit.streamSeq, lastSeq: commit.lastSeq };
}
