import type { AnyToolDefinition } from './core/tool-definition.js';
import { createApplyPatchTool } from './apply-patch/apply-patch-tool.js';
import type { BrowserToolOptions } from './browser/browser-tool.js';
import { createBrowserTool } from './browser/browser-tool.js';
import { createFileEditorTool } from './file-editor/file-editor-tool.js';
import type { SearchToolOptions } from './search/grep-tool.js';
import { createGrepTool } from './search/grep-tool.js';
import { createGlobTool } from './search/glob-tool.js';
import { createFinishTool } from './simple/finish-tool.js';
import { createTaskTrackerTool } from './simple/task-tracker-tool.js';
import { createThinkTool } from './simple/think-tool.js';
import type { TerminalToolOptions } from './terminal/terminal-tool.js';
import { createTerminalTool } from './terminal/terminal-tool.js';

export type BuiltinToolsOptions = {
  readonly terminal?: TerminalToolOptions;
  readonly search?: SearchToolOptions;
  readonly browser?: BrowserToolOptions;
};

/** The built-in tools a spec may list: terminal, file_editor, task_tracker, think, finish, grep, glob, apply_patch, browser. */
export function createBuiltinTools(options: BuiltinToolsOptions = {}): AnyToolDefinition[] {
  return [
    createTerminalTool(options.terminal),
    createFileEditorTool(),
    createTaskTrackerTool(),
    createThinkTool(),
    createFinishTool(),
    createGrepTool(options.search),
    createGlobTool(options.search),
    createApplyPatchTool(),
    createBrowserTool(options.browser),
  ];
}

let names: readonly string[] | undefined;

/** The names of the built-in tools, in their order (what a service can offer without MCP). */
export function builtinToolNames(): readonly string[] {
  names ??= Object.freeze(createBuiltinTools().map((tool) => tool.name));
  return names;
}
