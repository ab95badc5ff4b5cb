/** Why a condensation could not be made. */
export const CondenserErrorCode = {
  /** The configuration failed validation. */
  invalidConfig: 'invalid_config',
  /** The view holds nothing after the system prompt, yet a hard trigger asks for room. */
  nothingToForget: 'nothing_to_forget',
  /** The summary request overflowed the summarizer's context even after every shrinking retry. */
  summaryOverflow: 'summary_overflow',
  /** The summarizer replied without any text. */
  emptySummary: 'empty_summary',
} as const;
export type CondenserErrorCode = (typeof CondenserErrorCode)[keyof typeof CondenserErrorCode];

const RETRYABLE: ReadonlySet<CondenserErrorCode> = new Set<CondenserErrorCode>(['empty_summary']);

/** The one error type of `@flotilla/condenser`. LLM failures other than overflow pass through as `LlmError`. */
export class CondenserError extends Error {
  override readonly name = 'CondenserError';
  readonly code: CondenserErrorCode;
  readonly isRetryable: boolean;

  constructor(code: CondenserErrorCode, message: string, options: ErrorOptions = {}) {
    super(message, options);
    this.code = code;
    this.isRetryable = RETRYABLE.has(code);
  }
}

export function isCondenserError(error: unknown): error is CondenserError {
  return error instanceof CondenserError;
}
