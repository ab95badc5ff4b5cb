/** The logging surface this lib needs; a pino logger satisfies it. */
export type LlmLogger = {
  debug(fields: object, message?: string): void;
  info(fields: object, message?: string): void;
  warn(fields: object, message?: string): void;
  error(fields: object, message?: string): void;
};

const ignore = (): void => undefined;

export const silentLogger: LlmLogger = { debug: ignore, info: ignore, warn: ignore, error: ignore };
