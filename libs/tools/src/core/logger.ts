/**
 * The logger a tool receives. Structurally compatible with pino
 * (`logger.info({ fields }, 'message')`), so services can pass theirs.
 */
export type ToolLogger = {
  debug(fields: object, message?: string): void;
  info(fields: object, message?: string): void;
  warn(fields: object, message?: string): void;
  error(fields: object, message?: string): void;
};

const ignore = (): void => undefined;

export const silentLogger: ToolLogger = { debug: ignore, info: ignore, warn: ignore, error: ignore };
