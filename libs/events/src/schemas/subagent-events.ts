import { z } from 'zod';
import { ConversationId, EventId } from '../ids.js';
import { envelope, versionField } from './envelope.js';

/** A sub-agent's name, as the agent spec's `subAgents` define it and the `task` tool's calls name it. */
export const SubAgentName = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_.-]{0,63}$/, 'must be 1-64 characters of a-z 0-9 _ . -, starting with a letter or digit');
export type SubAgentName = z.infer<typeof SubAgentName>;

/**
 * A child conversation started for one of this conversation's `task` calls: the call's action
 * and the child that works on it. Its answer comes later, as the call's observation, once every
 * child of the batch has come to rest. Written by the delegator, in the parent's log, before the
 * child exists (the child is made from this event and the spec in force), so a crash between the
 * two makes the child again, never twice. Introduced in protocol version 4.
 */
export const SubagentStartedEvent = z.strictObject({
  ...envelope,
  v: versionField('subagent_started', 4),
  type: z.literal('subagent_started'),
  action_id: EventId,
  tool_call_id: z.string().min(1),
  /** The sub-agent (the spec's `subAgents` entry) the child runs as. */
  agent: SubAgentName,
  /** The child conversation (same tenant). */
  child: ConversationId,
});
export type SubagentStartedEvent = z.infer<typeof SubagentStartedEvent>;

/**
 * This conversation is a sub-agent's: the call of its parent it answers (`parent_call`), the
 * sub-agent it runs as, how deep below a conversation a user started it is (1 for a child of one),
 * and whose workspace it works in (its own id, or its parent's workspace for a shared one). In the
 * child's first commit, before its agent_spec's first use. Introduced in protocol version 4.
 */
export const SubagentTaskEvent = z.strictObject({
  ...envelope,
  v: versionField('subagent_task', 4),
  type: z.literal('subagent_task'),
  parent_call: z.strictObject({
    conversation: ConversationId,
    action_id: EventId,
    tool_call_id: z.string().min(1),
  }),
  agent: SubAgentName,
  depth: z.number().int().min(1).max(64),
  /** The conversation whose workspace this one's tools act in (itself for a workspace of its own). */
  workspace: ConversationId,
});
export type SubagentTaskEvent = z.infer<typeof SubagentTaskEvent>;
