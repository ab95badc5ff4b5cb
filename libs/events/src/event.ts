import { z } from 'zod';
import { ProtocolError, ProtocolErrorCode, type ProtocolIssue } from './errors.js';
import {
  ActionEvent,
  AgentErrorEvent,
  ApprovalEvent,
  ExecutionStartedEvent,
  MessageEvent,
  ObservationEvent,
  SystemPromptEvent,
  UserRejectionEvent,
} from './schemas/conversation-events.js';
import {
  CondensationEvent,
  CondensationRequestEvent,
  ConversationErrorEvent,
  HookExecutionEvent,
  InterruptEvent,
  LlmUsageEvent,
  PauseEvent,
  StateChangeEvent,
} from './schemas/control-events.js';
import { AgentSpecEvent } from './schemas/agent-spec-events.js';
import { McpToolsEvent } from './schemas/mcp-tools-events.js';
import { WorkspaceContextEvent } from './schemas/workspace-context-events.js';
import { SecretChangedEvent } from './schemas/secret-events.js';
import { SubagentStartedEvent, SubagentTaskEvent } from './schemas/subagent-events.js';
import { BranchEvent } from './schemas/branch-events.js';
import { WorkspaceFileEvent } from './schemas/workspace-file-events.js';
import { CURRENT_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from './version.js';

/** Every Flotilla event, discriminated on `type`. */
export const Event = z.discriminatedUnion('type', [
  SystemPromptEvent,
  MessageEvent,
  ActionEvent,
  ObservationEvent,
  AgentErrorEvent,
  UserRejectionEvent,
  ApprovalEvent,
  ExecutionStartedEvent,
  CondensationEvent,
  CondensationRequestEvent,
  StateChangeEvent,
  ConversationErrorEvent,
  PauseEvent,
  InterruptEvent,
  HookExecutionEvent,
  LlmUsageEvent,
  SecretChangedEvent,
  AgentSpecEvent,
  McpToolsEvent,
  WorkspaceContextEvent,
  SubagentStartedEvent,
  SubagentTaskEvent,
  BranchEvent,
  WorkspaceFileEvent,
]);
export type Event = z.infer<typeof Event>;
export type EventType = Event['type'];
export type EventOfType<T extends EventType> = Extract<Event, { type: T }>;

export const EVENT_TYPES = [
  'system_prompt',
  'message',
  'action',
  'observation',
  'agent_error',
  'user_rejection',
  'approval',
  'execution_started',
  'condensation',
  'condensation_request',
  'state_change',
  'conversation_error',
  'pause',
  'interrupt',
  'hook_execution',
  'llm_usage',
  'secret_changed',
  'agent_spec',
  'mcp_tools',
  'workspace_context',
  'subagent_started',
  'subagent_task',
  'branch',
  'workspace_file',
] as const satisfies readonly EventType[];

/** Compile-time check that EVENT_TYPES lists every member of the union, not just some. */
const _everyEventTypeListed: [Exclude<EventType, (typeof EVENT_TYPES)[number]>] extends [never] ? true : never = true;

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** An event before the log has placed it: everything but `seq`. */
export type EventDraft = DistributiveOmit<Event, 'seq'>;

/**
 * Flattens zod issues into protocol issues with dotted paths. An unknown key is reported
 * at the key itself (`events.0.colour`), not at the object that holds it.
 */
export function issuesOf(error: z.ZodError, prefix = ''): ProtocolIssue[] {
  return error.issues.flatMap((issue) => {
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({ path: prefix + joinPath([...issue.path, key]), message: 'unknown field' }));
    }
    return [{ path: prefix + joinPath(issue.path), message: issue.message }];
  });
}

function joinPath(path: readonly PropertyKey[]): string {
  return path.length === 0 ? '(root)' : path.map(String).join('.');
}

export function describeIssues(issues: readonly ProtocolIssue[]): string {
  return issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ');
}

/**
 * Fails loudly on a version this build cannot read (e.g. an event written by a newer
 * Flotilla), rather than misreading it.
 */
export function assertSupportedVersion(value: unknown, where: string, path = 'v'): void {
  const version = typeof value === 'object' && value !== null ? (value as { v?: unknown }).v : undefined;
  if (typeof version !== 'number' || !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
    const shown = version === undefined ? 'missing' : JSON.stringify(version);
    throw new ProtocolError(
      ProtocolErrorCode.UnsupportedVersion,
      `${where} has protocol version ${shown}; this build reads ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')} ` +
        `(current ${CURRENT_PROTOCOL_VERSION}). Upgrade Flotilla to read newer events.`,
      [{ path, message: `unsupported protocol version ${shown}` }],
    );
  }
}

/** Parses one event, throwing a ProtocolError that names every bad field. */
export function parseEvent(value: unknown): Event {
  assertSupportedVersion(value, 'event');
  const result = Event.safeParse(value);
  if (!result.success) {
    const issues = issuesOf(result.error);
    throw new ProtocolError(ProtocolErrorCode.InvalidEvent, `invalid event: ${describeIssues(issues)}`, issues);
  }
  return result.data;
}

export type ParseResult<T> = { ok: true; value: T } | { ok: false; error: ProtocolError };

export function safeParseEvent(value: unknown): ParseResult<Event> {
  try {
    return { ok: true, value: parseEvent(value) };
  } catch (error) {
    if (error instanceof ProtocolError) return { ok: false, error };
    throw error;
  }
}
