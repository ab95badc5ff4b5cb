export const WebhooksErrorCode = {
  /** No webhook of that id in the tenant. */
  NotFound: 'not_found',
  /** The tenant has MAX_WEBHOOKS_PER_TENANT webhooks already. */
  LimitReached: 'limit_reached',
  /** A stored registration, delivery or dead letter that does not parse, or a secret that does not decrypt under this key. */
  Corrupt: 'corrupt',
  /** A bucket or stream could not be created or opened, or refused an operation. */
  BucketUnavailable: 'bucket_unavailable',
  /** Timeout, disconnect, no responders: the same call may simply be tried again. */
  Unavailable: 'unavailable',
} as const;
export type WebhooksErrorCode = (typeof WebhooksErrorCode)[keyof typeof WebhooksErrorCode];

/** The one error base of @flotilla/webhooks. Its message never holds a signing secret. */
export class WebhooksError extends Error {
  override readonly name = 'WebhooksError';
  readonly code: WebhooksErrorCode;

  constructor(code: WebhooksErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }

  /** True when the same call may be tried again as it is. */
  get isRetryable(): boolean {
    return this.code === WebhooksErrorCode.Unavailable;
  }
}
