import type { ErrorCode } from '@flotilla/api';

/** A gateway error: HTTP status, the stable `code`, and `retryAfterSeconds` on 429/503. */
export class FlotillaApiError extends Error {
  override readonly name = 'FlotillaApiError';
  constructor(
    readonly status: number,
    readonly code: ErrorCode | 'network_error' | 'bad_response',
    message: string,
    readonly issues: readonly { path: string; message: string }[] = [],
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}
