import { SpecName, SubAgentName } from '@flotilla/events';
import { z } from 'zod';
import { listField, parseSkillFile, textField } from './skill-file.js';
import { SpecModel } from './spec-model.js';

/** The tool whose calls start sub-agents: each call a child conversation, answered by its final response. */
export const TASK_TOOL = 'task';

/** Children one conversation may have at work at once, and levels of sub-agents below a conversation a user started, where neither the spec nor the operator says. */
export const DEFAULT_MAX_SUB_AGENTS = 8;
export const DEFAULT_MAX_SUB_AGENT_DEPTH = 2;

/** Where a sub-agent's tools act: the workspace of the conversation that started it (`shared`, the default, as OpenHands' sub-agents share the working directory), or an empty one of its own. */
export const SubAgentWorkspace = z.enum(['shared', 'own']);
export type SubAgentWorkspace = z.infer<typeof SubAgentWorkspace>;

/**
 * A sub-agent a conversation's `task` tool may start, as the conversation's spec holds it
 * (resolved: its model is a spec model, never a key): what it is for (shown to the model in the
 * tool's description), the tools it gets (a subset of the parent's), its system prompt's
 * instructions, its model (the parent's when absent), its workspace, and its iteration limit.
 */
export const SubAgentDefinition = z.strictObject({
  name: SubAgentName,
  description: z.string().min(1).max(1_000),
  tools: z.array(z.string().min(1)).min(1).max(64),
  /** Appended to the default system prompt, as the definition's Markdown body is in OpenHands. */
  prompt: z.string().max(50_000),
  llm: SpecModel.optional(),
  workspace: SubAgentWorkspace.default('shared'),
  maxIterationsPerRun: z.number().int().positive().optional(),
});
export type SubAgentDefinition = z.infer<typeof SubAgentDefinition>;

/** The frontmatter of a Markdown definition: OpenHands' field names, the model a profile of the operator's. */
const Frontmatter = z.strictObject({
  name: SubAgentName,
  description: z.string().min(1).max(1_000),
  tools: z.array(z.string().min(1)).min(1).max(64),
  model: SpecName.optional(),
  workspace: SubAgentWorkspace.optional(),
  max_iteration_per_run: z.coerce.number().int().positive().optional(),
});

/** A Markdown definition read: the definition without its model, and the profile that is its model. */
export type SubAgentMarkdown = { readonly definition: Omit<SubAgentDefinition, 'llm'>; readonly profile?: string };

export type SubAgentMarkdownRead =
  | { readonly ok: true; readonly value: SubAgentMarkdown }
  | { readonly ok: false; readonly issues: readonly { readonly path: string; readonly message: string }[] };

/**
 * Reads a sub-agent's Markdown definition, as OpenHands writes them: a frontmatter (`name`,
 * `description`, `tools` as a list, `model` — a model profile's name —, `workspace` shared|own,
 * `max_iteration_per_run`) and a body, the instructions added to its system prompt. Unlike a
 * skill file (the repository's), a definition is the operator's: a field it does not know, or one
 * missing, is an error naming it.
 */
export function parseSubAgentMarkdown(text: string): SubAgentMarkdownRead {
  const file = parseSkillFile(text);
  if (Object.keys(file.attributes).length === 0)
    return {
      ok: false,
      issues: [
        {
          path: '(frontmatter)',
          message: 'a sub-agent definition starts with a frontmatter between --- lines (name, description, tools)',
        },
      ],
    };
  const fields: Record<string, unknown> = {};
  for (const name of Object.keys(file.attributes))
    fields[name] = name === 'tools' ? listField(file, name) : textField(file, name);
  const parsed = Frontmatter.safeParse(fields);
  if (!parsed.success) {
    return {
      ok: false,
      issues: parsed.error.issues.flatMap((issue) =>
        issue.code === 'unrecognized_keys'
          ? issue.keys.map((key) => ({
              path: key,
              message: 'unknown field (the fields: name, description, tools, model, workspace, max_iteration_per_run)',
            }))
          : [{ path: issue.path.map(String).join('.') || '(frontmatter)', message: issue.message }],
      ),
    };
  }
  const { name, description, tools, model, workspace, max_iteration_per_run: maxIterations } = parsed.data;
  return {
    ok: true,
    value: {
      definition: {
        name,
        description,
        tools,
        prompt: file.body,
        workspace: workspace ?? 'shared',
        ...(maxIterations !== undefined ? { maxIterationsPerRun: maxIterations } : {}),
      },
      ...(model !== undefined ? { profile: model } : {}),
    },
  };
}
