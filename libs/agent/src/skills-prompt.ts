import type { WorkspaceContextEvent } from '@flotilla/events';

/**
 * The system prompt's part of a workspace context (its dynamic block): the repository's own
 * instructions, and the `SKILL.md` skills the agent may read when one fits. Undefined when the
 * workspace said nothing.
 */
export function workspaceContextPrompt(context: WorkspaceContextEvent | undefined): string | undefined {
  if (!context) return undefined;
  const sections: string[] = [];
  if (context.repository.length > 0) {
    const files = context.repository.map(
      (file) => `[${file.path}${file.truncated ? ', its beginning only' : ''}]\n${file.content.trim()}`,
    );
    sections.push(
      `<REPO_CONTEXT>\nThe repository's own instructions, from files in the workspace. Follow them.\n\n${files.join('\n\n')}\n</REPO_CONTEXT>`,
    );
  }
  if (context.skills.length > 0) {
    const skills = context.skills.map(
      (skill) => `- ${skill.name}: ${skill.description || '(no description)'} (${skill.path})`,
    );
    sections.push(
      `<SKILLS>\nSkills in the workspace. When one fits the task, read its file (the path is relative to the workspace root) with the file editor and follow it.\n${skills.join('\n')}\n</SKILLS>`,
    );
  }
  return sections.length > 0 ? sections.join('\n\n') : undefined;
}
