import type { ToolSpec } from '@flotilla/events';
import type { ToolRegistry } from '@flotilla/tools';
import { z } from 'zod';
import { TASK_TOOL, type SubAgentDefinition } from './sub-agents.js';
import { registryCatalog, type ToolCatalog } from './tool-catalog.js';

/** What a `task` call asks: a sub-agent of the spec's, and the task it gets (all it will know). */
export const TaskInput = z.strictObject({
  agent: z.string().min(1),
  prompt: z.string().min(1).max(100_000),
  description: z.string().min(1).max(100).optional(),
});
export type TaskInput = z.infer<typeof TaskInput>;

const DESCRIPTION =
  'Delegate a task to a sub-agent. It works on it in a conversation of its own, with its own tools, and its final answer comes back as ' +
  "this call's result. It sees nothing of this conversation but the prompt you give it: include everything it needs to know. Make several " +
  'task calls in one reply to run sub-agents in parallel; their results come back together, once all of them have finished.';

/** The `task` tool as the model is offered it for these sub-agents: their names to choose from, each with what it is for. */
export function taskToolSpec(agents: readonly SubAgentDefinition[]): ToolSpec {
  const listed = agents.map((agent) => `- ${agent.name}: ${agent.description}`).join('\n');
  return {
    name: TASK_TOOL,
    description: `${DESCRIPTION}\n\nThe sub-agents:\n${listed}`,
    parameters: {
      type: 'object',
      properties: {
        agent: {
          type: 'string',
          enum: agents.map((agent) => agent.name),
          description: 'The sub-agent to give the task to.',
        },
        prompt: {
          type: 'string',
          description:
            'The whole task, with everything the sub-agent needs to know: it sees nothing else of this conversation.',
        },
        description: {
          type: 'string',
          description: 'A few words naming the task (the title of the sub-agent’s conversation).',
        },
      },
      required: ['agent', 'prompt'],
      additionalProperties: false,
    },
    annotations: { read_only: false, destructive: false, idempotent: false, open_world: false },
  };
}

/**
 * `base` with the `task` tool added, when the spec offers it (`tools` names it) and has
 * sub-agents for it: the step offers it and checks its calls like a built-in's (an unknown
 * sub-agent is an error the model reads); the delegator, not a tool runner, answers them.
 */
export function withTaskTool(
  base: ToolCatalog,
  spec: { readonly tools: readonly string[]; readonly subAgents: readonly SubAgentDefinition[] },
): ToolCatalog {
  if (!spec.tools.includes(TASK_TOOL) || spec.subAgents.length === 0) return base;
  const tool = taskToolSpec(spec.subAgents);
  const names = spec.subAgents.map((agent) => agent.name);
  const specs = [...base.specs().filter((candidate) => candidate.name !== TASK_TOOL), tool];
  return {
    specs: () => specs,
    isReadOnly: (name) => (name === TASK_TOOL ? false : base.isReadOnly(name)),
    check(name, input) {
      if (name !== TASK_TOOL) return base.check(name, input);
      const parsed = TaskInput.safeParse(input);
      if (!parsed.success) {
        const lines = parsed.error.issues.map(
          (issue) =>
            `- ${issue.path.map(String).join('.') || '(arguments)'}: ${issue.code === 'unrecognized_keys' ? `unknown argument ${issue.keys.join(', ')}` : issue.message}`,
        );
        return { ok: false, message: `Invalid arguments for tool "${TASK_TOOL}":\n${lines.join('\n')}` };
      }
      if (!names.includes(parsed.data.agent))
        return {
          ok: false,
          message: `There is no sub-agent "${parsed.data.agent}". The sub-agents: ${names.join(', ')}.`,
        };
      return { ok: true, input: parsed.data };
    },
  };
}

/** The built-in tools a spec offers, described by `registry`, with its `task` tool: what its steps offer before any MCP tool (the step worker and a replay alike). */
export function specTools(
  registry: ToolRegistry,
  spec: { readonly tools: readonly string[]; readonly subAgents: readonly SubAgentDefinition[] },
): ToolCatalog {
  return withTaskTool(registryCatalog(registry, spec.tools), spec);
}
