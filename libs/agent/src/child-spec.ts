import { createHash } from 'node:crypto';
import type { ConversationRef } from '@flotilla/log';
import { AGENT_SPEC_VERSION, AgentSpec } from './agent-spec.js';
import { TASK_TOOL, type SubAgentDefinition } from './sub-agents.js';

/**
 * The spec of a sub-agent's conversation, from its parent's spec in force and the sub-agent's
 * definition there: a pure function of the parent's log, so the child's `agent_spec` says how its
 * steps are made and a replay of the parent explains it. The child keeps what guards the parent
 * (hooks, confirmation, security analyzers, limits, stuck detection, condenser, skills) and gets
 * the definition's tools (some of the parent's), its instructions (added to the default system
 * prompt, as OpenHands adds a definition's body) and its model (the parent's when it names none).
 * It starts no MCP servers, and writes no title of its own (the delegator names it). Its
 * sub-agents are the parent's when its tools include `task` (the depth limit still holds), else none.
 */
export function childSpec(parent: AgentSpec, definition: SubAgentDefinition): AgentSpec {
  const { context: _context, instructions: _instructions, ...prompt } = parent.prompt;
  const limits = {
    ...parent.limits,
    ...(definition.maxIterationsPerRun !== undefined ? { maxIterationsPerRun: definition.maxIterationsPerRun } : {}),
  };
  return Object.freeze(
    AgentSpec.parse({
      ...parent,
      version: AGENT_SPEC_VERSION,
      llm: definition.llm ?? parent.llm,
      tools: definition.tools,
      mcpServers: [],
      subAgents: definition.tools.includes(TASK_TOOL) ? parent.subAgents : [],
      prompt: { ...prompt, ...(definition.prompt.trim() !== '' ? { instructions: definition.prompt } : {}) },
      limits,
      titles: { generate: false },
    }),
  );
}

/**
 * The id of the child conversation started for a parent's `task` call: derived from the parent
 * and the call's action, so that a delegator that dies after making the child and before
 * recording it makes the same child again (which then exists: its creation is a no-op), never a
 * second one. 36 characters, a conversation id of the parent's tenant.
 */
export function childConversationId(parent: ConversationRef, actionId: string): string {
  const digest = createHash('sha256').update(`${parent.tenant}\n${parent.conversation}\n${actionId}`).digest('hex');
  return `sub-${digest.slice(0, 32)}`;
}
