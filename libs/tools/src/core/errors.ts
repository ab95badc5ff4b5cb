/** Stable, machine-readable codes for every failure this library reports. */
export const ToolErrorCode = {
  UnknownTool: 'unknown_tool',
  InvalidJson: 'invalid_json',
  InvalidArguments: 'invalid_arguments',
  PathOutsideWorkspace: 'path_outside_workspace',
  /** Workspace files (listings, downloads, uploads): what is, or is not, at a path. */
  NotFound: 'not_found',
  NotADirectory: 'not_a_directory',
  IsADirectory: 'is_a_directory',
  NotARegularFile: 'not_a_regular_file',
  ExecutionFailed: 'execution_failed',
  McpConnectFailed: 'mcp_connect_failed',
  McpCallFailed: 'mcp_call_failed',
  PatchFailed: 'patch_failed',
  Timeout: 'timeout',
  DuplicateTool: 'duplicate_tool',
} as const;
export type ToolErrorCode = (typeof ToolErrorCode)[keyof typeof ToolErrorCode];

export type ToolErrorOptions = ErrorOptions & { readonly isRetryable?: boolean };

/** The one error base of `@flotilla/tools`. Messages are written for the model to read. */
export class ToolError extends Error {
  readonly code: ToolErrorCode;
  readonly isRetryable: boolean;

  constructor(code: ToolErrorCode, message: string, options: ToolErrorOptions = {}) {
    super(message, options);
    this.name = 'ToolError';
    this.code = code;
    this.isRetryable = options.isRetryable ?? false;
  }
}

export function isToolError(value: unknown): value is ToolError {
  return value instanceof ToolError;
}

/** A readable one-line description of anything thrown. */
export function describeError(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
