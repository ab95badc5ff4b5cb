export const SecretsErrorCode = {
  /** A name that is not an environment-variable name, or one the sandbox reserves. */
  InvalidName: 'invalid_name',
  /** A value that is too short, too long, holds a NUL or is not well-formed Unicode. */
  InvalidValue: 'invalid_value',
  /** A tenant or conversation id that cannot be a KV key token. */
  InvalidScope: 'invalid_scope',
  /** FLOTILLA_SECRETS_KEY (or the file FLOTILLA_SECRETS_KEY_FILE names) is not base64 of 32 bytes. */
  InvalidKey: 'invalid_key',
  /** No secrets key where one is needed (a key file that cannot be read). */
  NotConfigured: 'not_configured',
  /** A stored value that does not decrypt under this key and KV key: tampered with, moved, or another key's. */
  Corrupt: 'corrupt',
  /** The secrets bucket could not be created or opened, or refused an operation. */
  BucketUnavailable: 'bucket_unavailable',
  /** Timeout, disconnect, no responders: the same call may simply be tried again. */
  Unavailable: 'unavailable',
} as const;
export type SecretsErrorCode = (typeof SecretsErrorCode)[keyof typeof SecretsErrorCode];

/**
 * The one error base of @flotilla/secrets. Its message never holds a secret's value (only names,
 * KV keys and key ids), so it may be logged and shown as it is.
 */
export class SecretsError extends Error {
  override readonly name = 'SecretsError';
  readonly code: SecretsErrorCode;

  constructor(code: SecretsErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }

  /** True when the same call may be tried again as it is. */
  get isRetryable(): boolean {
    return this.code === SecretsErrorCode.Unavailable;
  }
}
