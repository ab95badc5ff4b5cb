/** Stable, machine-readable codes for every failure this library reports. */
export const SandboxErrorCode = {
  /** The configured kind cannot run here (missing binary, no user namespaces, no engine). */
  Unavailable: 'sandbox_unavailable',
  /** The kind runs but does not isolate (its self-test saw the host). */
  NotIsolated: 'sandbox_not_isolated',
  InvalidSettings: 'invalid_sandbox_settings',
  StartFailed: 'sandbox_start_failed',
  Closed: 'sandbox_closed',
  QuotaExceeded: 'workspace_quota_exceeded',
} as const;
export type SandboxErrorCode = (typeof SandboxErrorCode)[keyof typeof SandboxErrorCode];

export type SandboxErrorOptions = ErrorOptions & { readonly isRetryable?: boolean };

/** The one error base of `@flotilla/sandbox`. Messages say what was wrong and what to do. */
export class SandboxError extends Error {
  readonly code: SandboxErrorCode;
  readonly isRetryable: boolean;

  constructor(code: SandboxErrorCode, message: string, options: SandboxErrorOptions = {}) {
    super(message, options);
    this.name = 'SandboxError';
    this.code = code;
    this.isRetryable = options.isRetryable ?? false;
  }
}

export function isSandboxError(value: unknown): value is SandboxError {
  return value instanceof SandboxError;
}
