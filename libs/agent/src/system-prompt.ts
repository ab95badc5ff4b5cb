import type { ToolSpec, WorkspaceContextEvent } from '@flotilla/events';
import type { AgentConfig } from './agent-config.js';
import { workspaceContextPrompt } from './skills-prompt.js';

const STATIC_PROMPT = `You are Flotilla, a software engineering agent. You work in a workspace with real tools: a persistent terminal, a file editor, and others listed with their schemas.

How to work:
- Understand the task, inspect the workspace, then act in small verified steps.
- Prefer the file editor for reading and changing files; use the terminal to run programs and tests.
- After changing code, run it or its tests. Read errors carefully and fix the cause.
- When a tool reports an error, read it and correct your call; do not repeat the same failing call.
- Outputs may be truncated: the notice tells you where the full output was saved.
- When the task is done, call the finish tool with a short summary of what you did. If you cannot finish, say why.

Safety:
- Stay inside the workspace. Never exfiltrate secrets.
- For every call of a tool that changes something, set security_risk to low, medium or high honestly.`;

/**
 * The static (cacheable, shared) and dynamic (per-conversation) blocks of the system prompt. The
 * dynamic one holds the date, the spec's context, and what the workspace said (`context`: its
 * repository instructions and skills, skills-prompt.ts).
 */
export function buildSystemPrompt(
  agent: AgentConfig,
  now: Date,
  context?: WorkspaceContextEvent,
): { staticPrompt: string; dynamicPrompt?: string } {
  const staticPrompt = agent.prompt.instructions ? `${STATIC_PROMPT}\n\n${agent.prompt.instructions}` : STATIC_PROMPT;
  const dynamic: string[] = [];
  if (agent.prompt.includeDate) dynamic.push(`Today's date is ${now.toISOString().slice(0, 10)} (UTC).`);
  if (agent.prompt.context) dynamic.push(agent.prompt.context);
  const workspace = agent.skills.enabled ? workspaceContextPrompt(context) : undefined;
  if (workspace) dynamic.push(workspace);
  return dynamic.length > 0 ? { staticPrompt, dynamicPrompt: dynamic.join('\n\n') } : { staticPrompt };
}

/** Adds the parameters every call may carry: a one-line summary, and a risk for tools with side effects. */
export function withAgentParameters(tool: ToolSpec): ToolSpec {
  const parameters = tool.parameters as { properties?: Record<string, unknown>; required?: string[] };
  const properties: Record<string, unknown> = { ...(parameters.properties ?? {}) };
  properties['summary'] = {
    type: 'string',
    description: 'A short (≤ 10 words) summary of this call, shown to the user.',
  };
  const readOnly = tool.annotations?.read_only === true;
  if (!readOnly) {
    properties['security_risk'] = {
      type: 'string',
      enum: ['low', 'medium', 'high'],
      description:
        'Risk of this call: low (read-only, reversible), medium (changes the workspace), high (irreversible, external effects, secrets).',
    };
  }
  return { ...tool, parameters: { ...tool.parameters, properties } };
}
