export const CliErrorCode = {
  /** The command line is wrong: unknown command or option, missing or bad argument. */
  Usage: 'usage',
  /** No usable gateway URL or API key (flags, environment, `.flotilla/cli.json`). */
  Config: 'config',
} as const;
export type CliErrorCode = (typeof CliErrorCode)[keyof typeof CliErrorCode];

/** A problem with how the CLI was invoked; the message says what to fix. Exit status 2. */
export class CliError extends Error {
  override readonly name = 'CliError';
  constructor(
    readonly code: CliErrorCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

export function usageError(message: string): CliError {
  return new CliError(CliErrorCode.Usage, message);
}
