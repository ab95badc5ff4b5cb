import path from 'node:path';
import type { ToolLogger } from './logger.js';
import { silentLogger } from './logger.js';
import type { Workspace } from './workspace.js';

/** Everything a tool execution may use besides its parameters. */
export type ToolContext = {
  readonly workspace: Workspace;
  readonly conversationId: string;
  /** Cancels the execution (the run was paused or stopped). */
  readonly signal: AbortSignal;
  /** The conversation's private area (task list, history). */
  readonly conversationDir: string;
  /** Where oversized outputs are offloaded so the model can read them later. */
  readonly outputDir: string;
  readonly logger: ToolLogger;
};

export type ToolContextOptions = {
  readonly workspace: Workspace;
  readonly conversationId: string;
  readonly signal?: AbortSignal;
  readonly conversationDir?: string;
  readonly outputDir?: string;
  readonly logger?: ToolLogger;
};

/** A file-name-safe form of a conversation id. */
export function safeSegment(value: string): string {
  const cleaned = value.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+/, '_');
  return cleaned === '' ? '_' : cleaned.slice(0, 128);
}

/**
 * Build a context with defaults: the conversation area is
 * `<workspace>/.flotilla/conversations/<id>` and offloaded outputs go to its
 * `observations/` folder, inside the workspace so `file_editor` can read them.
 */
export function createToolContext(options: ToolContextOptions): ToolContext {
  const conversationDir =
    options.conversationDir ??
    path.join(options.workspace.root, '.flotilla', 'conversations', safeSegment(options.conversationId));
  return {
    workspace: options.workspace,
    conversationId: options.conversationId,
    signal: options.signal ?? new AbortController().signal,
    conversationDir,
    outputDir: options.outputDir ?? path.join(conversationDir, 'observations'),
    logger: options.logger ?? silentLogger,
  };
}
