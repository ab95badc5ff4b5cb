export const AuditorErrorCode = {
  /** Command-line arguments are missing or malformed. */
  Usage: 'usage',
  /** The checker was given nothing to tell which conversation it audits. */
  MissingConversation: 'missing_conversation',
  /** The events stream does not exist or cannot be read. */
  StreamUnavailable: 'stream_unavailable',
} as const;
export type AuditorErrorCode = (typeof AuditorErrorCode)[keyof typeof AuditorErrorCode];

/** The auditor's one error base. Violations are never thrown: they are reported. */
export class AuditorError extends Error {
  override readonly name = 'AuditorError';
  constructor(
    readonly code: AuditorErrorCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}
