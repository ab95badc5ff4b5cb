import { z } from 'zod';

/**
 * Skills and repository context from the conversation's workspace (OpenHands' semantics): the
 * root's AGENTS.md (or CLAUDE.md, GEMINI.md, .cursorrules) in the system prompt, nested AGENTS.md
 * files as rules for their folder, keyword-triggered knowledge skills, and `SKILL.md` skills
 * listed for the agent to read when it needs one. On, the tool runner reads the workspace before
 * the first step (`workspace_context`); off, nothing of the workspace reaches the model unasked.
 */
export const SkillsConfig = z.strictObject({
  enabled: z.boolean().default(true),
});
export type SkillsConfig = z.infer<typeof SkillsConfig>;

/**
 * Whether a spec as the log carries it (an `agent_spec` event's JSON) turns skills on: its
 * `skills` as SkillsConfig reads it, with the defaults for a spec written before the field existed.
 * A spec whose `skills` does not parse turns them off (its reader ends the run for that spec anyway).
 */
export function skillsEnabledIn(spec: Readonly<Record<string, unknown>>): boolean {
  const parsed = SkillsConfig.safeParse(spec['skills'] ?? {});
  return parsed.success && parsed.data.enabled;
}
