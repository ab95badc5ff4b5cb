import { ConversationInForce } from './conversation-in-force.js';
import { McpSessions } from './mcp-sessions.js';
import { RunnerWorkspaces } from './runner-workspaces.js';
import type { ToolRunnerDependencies } from './tool-runner-dependencies.js';
import { OwedNotes } from './workspace-notes.js';
import { WorkspaceOwnership } from './workspace-ownership.js';

/** What the tool runner's duties share: its dependencies, and what it knows of the conversations it serves. */
export type ToolRunnerContext = {
  readonly deps: ToolRunnerDependencies;
  /** Which workspaces this runner owns, and which its peers do. */
  readonly ownership: WorkspaceOwnership;
  /** What each cached conversation's log says its tools act with. */
  readonly inForce: ConversationInForce;
  /** The workspaces' directories on this host, and those opened. */
  readonly workspaces: RunnerWorkspaces;
  /** What each conversation's next batch owes the agent. */
  readonly notes: OwedNotes;
  /** The MCP servers of the conversations this runner owns. */
  readonly mcp: McpSessions;
};

export function createToolRunnerContext(deps: ToolRunnerDependencies): ToolRunnerContext {
  return {
    deps,
    ownership: new WorkspaceOwnership(deps),
    inForce: new ConversationInForce(deps),
    workspaces: new RunnerWorkspaces(deps),
    notes: new OwedNotes(),
    mcp: new McpSessions({ builtins: deps.tools, logger: deps.logger }),
  };
}
