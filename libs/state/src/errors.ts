export const StateErrorCode = {
  /** The server has no JetStream (or this account may not use it). */
  JetStreamUnavailable: 'jetstream_unavailable',
  /** The snapshot bucket could not be created or opened. */
  BucketUnavailable: 'bucket_unavailable',
  /** Too many concurrent writers kept winning the compare-and-set: try again later. */
  Conflict: 'conflict',
  /** Timeout, disconnect, no responders: the same call may simply be tried again. */
  Transient: 'transient',
  /** The KV store refused the operation for a reason retrying will not fix. */
  StoreFailed: 'store_failed',
  /** A commit does not start right after the snapshot's last event: catch up from the log instead. */
  Gap: 'gap',
  /** A commit overlaps events the snapshot already holds, at a stream position it has not seen. */
  Overlap: 'overlap',
  /** A commit of another conversation was offered to this snapshot. */
  WrongConversation: 'wrong_conversation',
  /** A commit whose seqs are not contiguous or do not match its events. */
  InvalidCommit: 'invalid_commit',
  /** A snapshot that fails its own schema was about to be stored (a bug in the caller). */
  InvalidSnapshot: 'invalid_snapshot',
  /** A tenant or conversation id that cannot be a KV key token. */
  InvalidRef: 'invalid_ref',
  /** The snapshot reflects events the log no longer (or never) held: rebuild it from the log. */
  SnapshotAhead: 'snapshot_ahead',
  /** A snapshot written by a newer Flotilla: upgrade before reading it. */
  UnsupportedVersion: 'unsupported_snapshot_version',
  Closed: 'closed',
} as const;
export type StateErrorCode = (typeof StateErrorCode)[keyof typeof StateErrorCode];

const RETRYABLE: ReadonlySet<StateErrorCode> = new Set([StateErrorCode.Conflict, StateErrorCode.Transient]);

/** The one error base of @flotilla/state. */
export class StateError extends Error {
  override readonly name: string = 'StateError';
  readonly code: StateErrorCode;

  constructor(code: StateErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }

  /** True when the same call may be tried again as it is. */
  get isRetryable(): boolean {
    return RETRYABLE.has(this.code);
  }
}

/**
 * A commit that does not continue the snapshot: applying it would make the snapshot wrong.
 * The cure is to catch up from the log (or rebuild), not to retry the same commits.
 */
export class CommitOrderError extends StateError {
  override readonly name = 'CommitOrderError';
  constructor(
    readonly expectedFirstSeq: number,
    readonly actualFirstSeq: number,
    readonly streamSeq: number,
    where: string,
  ) {
    super(
      actualFirstSeq > expectedFirstSeq ? StateErrorCode.Gap : StateErrorCode.Overlap,
      `${where}: commit #${streamSeq} starts at seq ${actualFirstSeq}, but the snapshot needs seq ${expectedFirstSeq} next; ` +
        'catch the snapshot up from the log instead',
    );
  }
}

export function isStateError(error: unknown): error is StateError {
  return error instanceof StateError;
}
