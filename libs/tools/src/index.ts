export { ToolError, ToolErrorCode, isToolError, describeError } from './core/errors.js';
export type { ToolErrorOptions } from './core/errors.js';
export { silentLogger } from './core/logger.js';
export type { ToolLogger } from './core/logger.js';
export { textResult, errorResult, resultText } from './core/result.js';
export type { TextContent, ImageContent, ToolContent, ToolResult } from './core/result.js';
export { openWorkspace } from './core/workspace.js';
export type { Workspace } from './core/workspace.js';
export type { DirectoryEntry, DirectoryListing, EntryType, ListLimits, OpenedFile } from './core/workspace-entries.js';
export { createToolContext, safeSegment } from './core/context.js';
export type { ToolContext, ToolContextOptions } from './core/context.js';
export { defineTool } from './core/tool-definition.js';
export type {
  AnyToolDefinition,
  JsonSchema,
  ResourceContext,
  ToolAnnotations,
  ToolDefinition,
} from './core/tool-definition.js';
export { parametersJsonSchema } from './core/json-schema.js';
export { boundOutput, capText, DEFAULT_OUTPUT_LIMIT, OUTPUT_BOUNDS } from './core/output-bounds.js';
export type { BoundOutputOptions, BoundedOutput } from './core/output-bounds.js';
export { ToolRegistry } from './core/tool-registry.js';
export type { RawToolCall, ToolRegistryOptions, ToolSchema, ValidatedToolCall } from './core/tool-registry.js';

export { createTerminalTool, NO_CHANGE_TIMEOUT_SECONDS, TerminalParameters } from './terminal/terminal-tool.js';
export type { TerminalTool, TerminalToolOptions } from './terminal/terminal-tool.js';
export { createFileEditorTool, FileEditorParameters } from './file-editor/file-editor-tool.js';
export { MAX_VIEW_CHARS } from './file-editor/file-editor-commands.js';
export {
  createTaskTrackerTool,
  Task,
  TaskStatus,
  TaskTrackerParameters,
  TASKS_FILE_NAME,
} from './simple/task-tracker-tool.js';
export { createThinkTool, ThinkParameters } from './simple/think-tool.js';
export { createFinishTool, FinishParameters, FINISH_TOOL_NAME } from './simple/finish-tool.js';
export { createGrepTool, GrepParameters } from './search/grep-tool.js';
export type { SearchToolOptions } from './search/grep-tool.js';
export { createGlobTool, GlobParameters } from './search/glob-tool.js';
export { globToRegExp } from './search/glob-pattern.js';
export { createApplyPatchTool, ApplyPatchParameters, parsePatch } from './apply-patch/apply-patch-tool.js';
export type { FileChange, Hunk, HunkLine, ParsedPatch } from './apply-patch/patch-model.js';
export { createBrowserTool, BrowserParameters, BROWSER_TOOL_NAME } from './browser/browser-tool.js';
export type { BrowserTool, BrowserToolOptions } from './browser/browser-tool.js';
export { builtinToolNames, createBuiltinTools } from './builtin-tools.js';
export type { BuiltinToolsOptions } from './builtin-tools.js';

export { connectMcpServers } from './mcp/connect-mcp-servers.js';
export type { ConnectMcpOptions, McpConnection, McpServerFailure } from './mcp/connect-mcp-servers.js';
export { McpServerConfig, McpStdioServerConfig, McpHttpServerConfig, mcpToolName } from './mcp/mcp-config.js';
export type { McpServerConfigInput } from './mcp/mcp-config.js';
export { unavailableMcpTool } from './mcp/mcp-tool.js';
export type { McpToolParameters } from './mcp/mcp-tool.js';
