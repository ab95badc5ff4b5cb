import { z } from 'zod';
import { envelope, versionField } from './envelope.js';

/** A path inside the conversation's workspace, relative to its root (`src/AGENTS.md`), never a host path. */
export const WorkspacePath = z
  .string()
  .min(1)
  .max(1_000)
  .regex(/^(?!\/)(?!(?:.*\/)?\.\.(?:\/|$))[^\0]+$/, 'must be a path relative to the workspace root, without ..');

/** What the tool runner keeps of one file: its text, cut at a bound (`truncated` then says so). */
const FileText = {
  path: WorkspacePath,
  content: z.string().max(100_000),
  truncated: z.boolean(),
};

/** A skill's name as its file gives it (or its file's name). */
const SkillName = z.string().min(1).max(100);

/** Repository context: a file at the workspace root (AGENTS.md, CLAUDE.md, GEMINI.md, .cursorrules) or an always-on skill. */
export const ContextFile = z.strictObject(FileText);
export type ContextFile = z.infer<typeof ContextFile>;

/** A knowledge skill: its text joins the first user message that mentions one of its triggers (once per conversation). */
export const KnowledgeSkill = z.strictObject({
  ...FileText,
  name: SkillName,
  triggers: z.array(z.string().min(1).max(100)).min(1).max(20),
});
export type KnowledgeSkill = z.infer<typeof KnowledgeSkill>;

/** A `SKILL.md` skill: listed in the system prompt by name and description, its file read by the agent when it needs it. */
export const AgentSkill = z.strictObject({
  name: SkillName,
  description: z.string().max(1_000),
  path: WorkspacePath,
});
export type AgentSkill = z.infer<typeof AgentSkill>;

/** A nested AGENTS.md: its text joins the first observation of an action touching its folder. */
export const PathRule = z.strictObject({
  ...FileText,
  /** The folder it governs (the one holding it), relative to the workspace root. */
  folder: WorkspacePath,
});
export type PathRule = z.infer<typeof PathRule>;

/**
 * What the conversation's workspace says about how to work in it, read by the tool runner that
 * owns it (before the first step, when the agent spec turns skills on) so that the step worker,
 * which never sees the workspace, builds the system prompt and activates skills from the log
 * alone. Every text is bounded; `notes` says what was cut or left out and why.
 * Introduced in protocol version 3.
 */
export const WorkspaceContextEvent = z.strictObject({
  ...envelope,
  v: versionField('workspace_context', 3),
  type: z.literal('workspace_context'),
  repository: z.array(ContextFile).max(16),
  knowledge: z.array(KnowledgeSkill).max(100),
  skills: z.array(AgentSkill).max(100),
  rules: z.array(PathRule).max(100),
  notes: z.array(z.string().min(1).max(500)).max(50),
});
export type WorkspaceContextEvent = z.infer<typeof WorkspaceContextEvent>;
