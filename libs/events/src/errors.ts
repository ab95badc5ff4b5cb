export const ProtocolErrorCode = {
  InvalidEvent: 'invalid_event',
  InvalidCommit: 'invalid_commit',
  UnsupportedVersion: 'unsupported_protocol_version',
} as const;
export type ProtocolErrorCode = (typeof ProtocolErrorCode)[keyof typeof ProtocolErrorCode];

export type ProtocolIssue = { readonly path: string; readonly message: string };

/** A value that does not follow the event protocol. `issues` name the offending fields. */
export class ProtocolError extends Error {
  override readonly name = 'ProtocolError';
  readonly code: ProtocolErrorCode;
  readonly issues: readonly ProtocolIssue[];

  constructor(code: ProtocolErrorCode, message: string, issues: readonly ProtocolIssue[] = [], options?: ErrorOptions) {
    super(message, options);
    this.code = code;
    this.issues = issues;
  }

  /** Never worth retrying: the same bytes fail the same way. */
  get isRetryable(): boolean {
    return false;
  }
}
