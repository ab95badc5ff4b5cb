import type { ProtocolIssue } from '@flotilla/events';

export const LogErrorCode = {
  /** Another writer appended first: re-read the tail, re-decide, append again. */
  Conflict: 'conflict',
  /** Timeout, disconnect, JetStream briefly unavailable: retry the same commit. */
  Transient: 'transient',
  /** An event failed validation; nothing was written. */
  InvalidEvent: 'invalid_event',
  /** The commit is larger than the server accepts. */
  TooLarge: 'too_large',
  /** A message on a conversation subject that is not a valid commit. */
  CorruptCommit: 'corrupt_commit',
  /** The server has no JetStream, or this account may not use it. */
  JetStreamUnavailable: 'jetstream_unavailable',
  /** The events stream exists with a configuration Flotilla cannot use. */
  StreamMisconfigured: 'stream_misconfigured',
  /** A commit written by a newer Flotilla: upgrade before reading this log. */
  UnsupportedVersion: 'unsupported_protocol_version',
  /** This connection's NATS user may not do it (a subscription refused): grant the permission. */
  Forbidden: 'forbidden',
  Closed: 'closed',
} as const;
export type LogErrorCode = (typeof LogErrorCode)[keyof typeof LogErrorCode];

export class LogError extends Error {
  override readonly name: string = 'LogError';
  readonly code: LogErrorCode;
  readonly issues: readonly ProtocolIssue[];

  constructor(code: LogErrorCode, message: string, options?: ErrorOptions & { issues?: readonly ProtocolIssue[] }) {
    super(message, options);
    this.code = code;
    this.issues = options?.issues ?? [];
  }

  /** True when the very same append may simply be tried again. Conflicts need a re-decision instead. */
  get isRetryable(): boolean {
    return this.code === LogErrorCode.Transient;
  }
}

/** The conversation's tail moved since the writer read it. */
export class ConflictError extends LogError {
  override readonly name = 'ConflictError';
  constructor(
    message: string,
    /** The subject's actual last stream sequence, when the server said so. */
    readonly actualStreamSeq: number | undefined,
    options?: ErrorOptions,
  ) {
    super(LogErrorCode.Conflict, message, options);
  }
}

export function isConflict(error: unknown): error is ConflictError {
  return error instanceof LogError && error.code === LogErrorCode.Conflict;
}
