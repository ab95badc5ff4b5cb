import type { ConversationRef, EventLog } from '@flotilla/log';
import type { ConversationCache, InterruptRegistry, Logger, RunnerRegistry, ServiceMetrics } from '@flotilla/runtime';
import type { SandboxPool } from '@flotilla/sandbox';
import type { ToolRegistry } from '@flotilla/tools';
import type { NatsConnection } from '@nats-io/transport-node';
import type { WorkspaceFilesOptions } from './workspace-files.js';

export type ToolRunnerDependencies = {
  readonly runnerId: string;
  readonly log: EventLog;
  readonly cache: ConversationCache;
  readonly tools: ToolRegistry;
  readonly runners: RunnerRegistry;
  readonly interrupts: InterruptRegistry;
  readonly nc: NatsConnection;
  readonly metrics: ServiceMetrics;
  readonly logger: Logger;
  /** Workspaces live in `<workspaceRoot>/<tenant>/<conversation>`. */
  readonly workspaceRoot: string;
  /** The service's own files of each conversation (terminal FIFOs, saved outputs, task list) live in `<privateRoot>/<tenant>/<conversation>`. */
  readonly privateRoot: string;
  /** Each conversation's sandbox: everything the agent runs runs in it. */
  readonly sandboxes: SandboxPool;
  /** The values each conversation's sandbox gets (its secrets); absent where secrets are not configured. */
  readonly secrets?: { reveal(ref: ConversationRef): Promise<Record<string, string>> };
  /** Replaces the values of `secrets` in text by their masks. */
  readonly mask?: (text: string, secrets: Readonly<Record<string, string>>) => string;
  /** The workspace's size quota. */
  readonly workspaceQuotaBytes?: number;
  /** Which secrets' values occur in bytes read in parts: a file holding one is not handed out (it cannot be masked byte for byte). */
  readonly scanSecrets?: WorkspaceFilesOptions['scan'];
  /** How long to wait for the owning runner to take forwarded work. */
  readonly forwardTimeoutMs?: number;
  /** The live runner that owns a partition of the conversations (the runners' group ranks them), once known. */
  readonly partitionOwner?: (partition: number) => string | undefined;
};

/** What a conversation goes by in the tool runner: its maps, its sandbox, its terminal and its MCP sessions. */
export const conversationKey = (ref: ConversationRef): string => `${ref.tenant}.${ref.conversation}`;
