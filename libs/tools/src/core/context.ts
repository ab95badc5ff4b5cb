import path from 'node:path';
import { openHostSandbox, type Sandbox } from '@flotilla/sandbox';
import type { ToolLogger } from './logger.js';
import { silentLogger } from './logger.js';
import type { Workspace } from './workspace.js';

/** Everything a tool execution may use besides its parameters. */
export type ToolContext = {
  readonly workspace: Workspace;
  /** Where everything the agent runs runs: its terminal, MCP stdio servers, hooks. */
  readonly sandbox: Sandbox;
  readonly conversationId: string;
  /** Cancels the execution (the run was paused or stopped). */
  readonly signal: AbortSignal;
  /** The conversation's private area (task list, saved outputs): the service's, seen read-only by the sandbox. */
  readonly conversationDir: string;
  /** Where oversized outputs are offloaded so the model can read them later. */
  readonly outputDir: string;
  /** The workspace's size quota: a command that takes it past this is stopped. */
  readonly workspaceQuotaBytes?: number;
  /** Masks what must not be kept or shown (the conversation's secrets) in a tool's output, before it is saved anywhere. */
  readonly redact?: (text: string) => string;
  readonly logger: ToolLogger;
};

export type ToolContextOptions = {
  readonly workspace: Workspace;
  /** Default: no isolation, processes on this host in the workspace (for tests and embedding). */
  readonly sandbox?: Sandbox;
  readonly conversationId: string;
  readonly signal?: AbortSignal;
  readonly conversationDir?: string;
  readonly outputDir?: string;
  readonly workspaceQuotaBytes?: number;
  readonly redact?: (text: string) => string;
  readonly logger?: ToolLogger;
};

/** A file-name-safe form of a conversation id. */
export function safeSegment(value: string): string {
  const cleaned = value.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+/, '_');
  return cleaned === '' ? '_' : cleaned.slice(0, 128);
}

/**
 * Build a context with defaults: the sandbox runs processes on this host unsandboxed, the
 * conversation area is the sandbox's private directory (outside the workspace: the agent can
 * read it but neither change it nor plant links in it), offloaded outputs go to its
 * `observations/` folder.
 */
export function createToolContext(options: ToolContextOptions): ToolContext {
  const sandbox = options.sandbox ?? openHostSandbox({ id: options.conversationId, workspace: options.workspace.root });
  const conversationDir = options.conversationDir ?? sandbox.privateDir;
  return {
    workspace: options.workspace,
    sandbox,
    conversationId: options.conversationId,
    signal: options.signal ?? new AbortController().signal,
    conversationDir,
    outputDir: options.outputDir ?? path.join(conversationDir, 'observations'),
    ...(options.workspaceQuotaBytes === undefined ? {} : { workspaceQuotaBytes: options.workspaceQuotaBytes }),
    ...(options.redact === undefined ? {} : { redact: options.redact }),
    logger: options.logger ?? silentLogger,
  };
}
