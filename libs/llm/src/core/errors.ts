/** Stable, machine-readable failure categories for every LLM call. */
export const LlmErrorCode = {
  auth: 'auth',
  permission: 'permission',
  quota: 'quota',
  rateLimit: 'rate_limit',
  contextWindowExceeded: 'context_window_exceeded',
  contentFilter: 'content_filter',
  badRequest: 'bad_request',
  notFound: 'not_found',
  transient: 'transient',
  timeout: 'timeout',
  cancelled: 'cancelled',
  malformedResponse: 'malformed_response',
  /** The reply (text, reasoning, tool calls) grew past `maxReplyChars`: a runaway or endless stream. Not retried. */
  replyTooLarge: 'reply_too_large',
  invalidConfig: 'invalid_config',
  unknown: 'unknown',
} as const;
export type LlmErrorCode = (typeof LlmErrorCode)[keyof typeof LlmErrorCode];

const RETRYABLE_BY_DEFAULT: ReadonlySet<LlmErrorCode> = new Set<LlmErrorCode>(['rate_limit', 'transient', 'timeout']);

/**
 * The failures that are the provider's state, not the call's: it is down, overloaded or cut off
 * (`transient`: a 5xx, Anthropic's 529 overloaded, a broken connection), it limits the caller
 * (`rate_limit`: 429), it is too slow (`timeout`), or the account has no quota left (`quota`:
 * retrying the same account will not help, another provider or account may). Another model can
 * make the same call, so a model's fallbacks are tried on these once its own retries are spent. A
 * request refused as such (a 4xx, a key or permission refused, a context too long, a filtered
 * reply, a reply malformed or too large) would fail the same way elsewhere, or is the operator's
 * to fix: never a fallback.
 */
export const OUTAGE_CODES: ReadonlySet<LlmErrorCode> = new Set<LlmErrorCode>([
  'transient',
  'rate_limit',
  'timeout',
  'quota',
]);

export type LlmErrorOptions = ErrorOptions & {
  readonly isRetryable?: boolean;
  /** HTTP status of the provider response, when there was one. */
  readonly status?: number;
  /** Delay the provider asked for (Retry-After / retry-after-ms), in milliseconds. */
  readonly retryAfterMs?: number;
  /** The provider that failed, e.g. 'anthropic'. */
  readonly provider?: string;
};

/** The one error type of `@flotilla/llm`. Branch on `code`, never on `message`. */
export class LlmError extends Error {
  override readonly name = 'LlmError';
  readonly code: LlmErrorCode;
  readonly isRetryable: boolean;
  readonly status: number | undefined;
  readonly retryAfterMs: number | undefined;
  readonly provider: string | undefined;

  constructor(code: LlmErrorCode, message: string, options: LlmErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.isRetryable = options.isRetryable ?? RETRYABLE_BY_DEFAULT.has(code);
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
    this.provider = options.provider;
  }
}

export function isLlmError(error: unknown): error is LlmError {
  return error instanceof LlmError;
}

/** Whether a failure is a provider's outage (`OUTAGE_CODES`) that another model may serve. */
export function isOutage(error: unknown): error is LlmError {
  return error instanceof LlmError && OUTAGE_CODES.has(error.code);
}

export function cancelledError(reason?: unknown): LlmError {
  return new LlmError('cancelled', 'The LLM call was cancelled by its caller.', { cause: reason });
}

export function malformedResponse(provider: string, detail: string, cause?: unknown): LlmError {
  return new LlmError('malformed_response', `${provider} returned a malformed response: ${detail}`, {
    provider,
    cause,
  });
}
