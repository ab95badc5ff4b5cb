import { lstat, opendir } from 'node:fs/promises';
import { posix, relative, sep } from 'node:path';
import {
  draftEvent,
  type AgentSkill,
  type ContextFile,
  type DraftContext,
  type EventDraft,
  type KnowledgeSkill,
  type PathRule,
} from '@flotilla/events';
import type { Workspace } from '@flotilla/tools';
import { listField, parseSkillFile, textField } from './skill-file.js';

/**
 * Every bound on what the workspace context reads and keeps, in one place: a repository whose
 * AGENTS.md is 1 GB, or which holds a million folders, costs the tool runner these, not its size.
 */
export const WORKSPACE_CONTEXT_BOUNDS = {
  /** Characters kept of one repository file or rule (the rest is cut, and a note says so). */
  fileChars: 20_000,
  /** Characters kept of one knowledge skill. */
  skillChars: 10_000,
  /** Characters of a SKILL.md read for its name and description. */
  skillHeaderChars: 4_000,
  /** Characters kept in all: what comes after is left out, and a note says so. */
  totalChars: 200_000,
  /** Folders looked into for nested AGENTS.md files, and how deep. */
  folders: 2_000,
  depth: 6,
  /** Entries read of one folder. */
  entriesPerFolder: 2_000,
  /** Skills of each kind, rules, notes. */
  skills: 100,
  rules: 100,
  notes: 50,
} as const;

/** The files at the workspace root that are repository context, in the order they are shown. */
export const REPOSITORY_CONTEXT_FILES = ['AGENTS.md', 'CLAUDE.md', 'GEMINI.md', '.cursorrules'] as const;

/** Folders holding skills: `<name>.md` knowledge skills (or always-on context without triggers), `<name>/SKILL.md` skills. */
export const SKILL_FOLDERS = ['.agents/skills', '.openhands/skills'] as const;

/** The file name of a nested folder's rules. */
export const PATH_RULES_FILE = 'AGENTS.md';

/** Folders never walked for rules: dependencies and version control, not the repository's own. */
const SKIPPED_FOLDERS: ReadonlySet<string> = new Set([
  'node_modules',
  '.git',
  'dist',
  'build',
  'target',
  'vendor',
  '__pycache__',
]);

/** A workspace_context event's fields. */
export type WorkspaceContextPayload = {
  repository: ContextFile[];
  knowledge: KnowledgeSkill[];
  skills: AgentSkill[];
  rules: PathRule[];
  notes: string[];
};

/**
 * Reads what a workspace says about working in it (the files of `REPOSITORY_CONTEXT_FILES`, the
 * skills of `SKILL_FOLDERS`, nested AGENTS.md rules), within `WORKSPACE_CONTEXT_BOUNDS`. Files
 * are read through the workspace (no symlink leads out of it), folders are walked without
 * following symlinks. Never throws for what the workspace holds: what cannot be read is a note.
 */
export async function readWorkspaceContext(workspace: Workspace): Promise<WorkspaceContextPayload> {
  const reader = new ContextReader(workspace);
  for (const name of REPOSITORY_CONTEXT_FILES) {
    const file = await reader.text(name, WORKSPACE_CONTEXT_BOUNDS.fileChars);
    if (file) reader.payload.repository.push({ path: name, content: file.content, truncated: file.truncated });
  }
  for (const folder of SKILL_FOLDERS) await reader.skills(folder);
  await reader.rules();
  return reader.payload;
}

/** The event recording what `readWorkspaceContext` found. */
export function workspaceContextDraft(context: DraftContext, payload: WorkspaceContextPayload): EventDraft {
  return draftEvent({ ...context, source: 'environment' }, 'workspace_context', payload);
}

type FileText = { readonly content: string; readonly truncated: boolean };

class ContextReader {
  readonly payload: WorkspaceContextPayload = { repository: [], knowledge: [], skills: [], rules: [], notes: [] };
  #chars = 0;

  constructor(private readonly workspace: Workspace) {}

  note(text: string): void {
    if (this.payload.notes.length < WORKSPACE_CONTEXT_BOUNDS.notes)
      this.payload.notes.push(text.length > 500 ? `${text.slice(0, 499)}…` : text);
  }

  /**
   * A regular file's text (relative path), at most `limit` characters, reading no more of it than
   * that needs; undefined when it is missing, not a regular file (a FIFO would block the read), or
   * the total is spent. `noteCut`: say so in a note when the text is cut.
   */
  async text(path: string, limit: number, noteCut = true): Promise<FileText | undefined> {
    let host: string;
    try {
      host = await this.workspace.resolvePath(path);
      if (!(await lstat(host)).isFile()) return undefined;
    } catch {
      return undefined;
    }
    let handle;
    try {
      handle = await this.workspace.openFile(host);
    } catch {
      return undefined; // gone meanwhile, or a link leading out of the workspace
    }
    try {
      const info = await handle.stat();
      if (!info.isFile()) return undefined;
      const left = WORKSPACE_CONTEXT_BOUNDS.totalChars - this.#chars;
      if (left <= 0) {
        this.note(
          `${path} was left out: the workspace context is full (${WORKSPACE_CONTEXT_BOUNDS.totalChars} characters)`,
        );
        return undefined;
      }
      const keep = Math.min(limit, left);
      // a character is at most 4 bytes of UTF-8: 4 * keep bytes hold keep characters
      const buffer = Buffer.alloc(Math.min(info.size, keep * 4));
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
      let content = new TextDecoder('utf-8').decode(buffer.subarray(0, bytesRead));
      let truncated = info.size > bytesRead;
      if (content.length > keep) {
        content = content.slice(0, keep);
        truncated = true;
      }
      if (truncated) content = content.replace(/\uFFFD$/u, ''); // a character cut where the bytes read end
      if (truncated && noteCut) this.note(`${path} is longer than ${keep} characters: only its beginning is kept`);
      this.#chars += content.length;
      return { content, truncated };
    } catch (error) {
      this.note(`${path} could not be read: ${(error as Error).message}`);
      return undefined;
    } finally {
      await handle.close();
    }
  }

  /** The skills of one skill folder. */
  async skills(folder: string): Promise<void> {
    for (const entry of await this.#entries(folder)) {
      const path = posix.join(folder, entry.name);
      if (entry.isFile() && entry.name.endsWith('.md') && entry.name.toLowerCase() !== 'readme.md')
        await this.#knowledgeSkill(path, entry.name.slice(0, -3));
      else if (entry.isDirectory()) await this.#agentSkill(posix.join(path, 'SKILL.md'), entry.name);
    }
  }

  async #knowledgeSkill(path: string, fallbackName: string): Promise<void> {
    if (this.payload.knowledge.length >= WORKSPACE_CONTEXT_BOUNDS.skills)
      return this.note(`${path} was left out: at most ${WORKSPACE_CONTEXT_BOUNDS.skills} knowledge skills are read`);
    const file = await this.text(path, WORKSPACE_CONTEXT_BOUNDS.skillChars);
    if (!file) return;
    const parsed = parseSkillFile(file.content);
    const name = clip(textField(parsed, 'name') ?? fallbackName, 100);
    const triggers = listField(parsed, 'triggers')
      .map((trigger) => trigger.trim())
      .filter((trigger) => trigger !== '')
      .slice(0, 20)
      .map((trigger) => clip(trigger, 100));
    // a skill without triggers is always on: repository context, as OpenHands' repo skills are
    if (triggers.length === 0) this.payload.repository.push({ path, content: parsed.body, truncated: file.truncated });
    else this.payload.knowledge.push({ path, content: parsed.body, truncated: file.truncated, name, triggers });
  }

  async #agentSkill(path: string, fallbackName: string): Promise<void> {
    if (this.payload.skills.length >= WORKSPACE_CONTEXT_BOUNDS.skills)
      return this.note(`${path} was left out: at most ${WORKSPACE_CONTEXT_BOUNDS.skills} skills are listed`);
    const file = await this.text(path, WORKSPACE_CONTEXT_BOUNDS.skillHeaderChars, false);
    if (!file) return;
    // only the name and description are kept: the agent reads the file itself when it uses the skill
    this.#chars -= file.content.length;
    const parsed = parseSkillFile(file.content);
    const description =
      textField(parsed, 'description') ??
      parsed.body
        .split('\n')
        .find((line) => line.trim() !== '')
        ?.replace(/^#+\s*/u, '') ??
      '';
    this.payload.skills.push({
      name: clip(textField(parsed, 'name') ?? fallbackName, 100),
      description: clip(description, 1_000),
      path,
    });
    this.#chars += description.length;
  }

  /** Nested AGENTS.md files, breadth first from the root, within the folder and depth bounds. */
  async rules(): Promise<void> {
    const queue: { readonly path: string; readonly depth: number }[] = [{ path: '', depth: 0 }];
    let visited = 0;
    while (queue.length > 0) {
      const folder = queue.shift()!;
      if (visited >= WORKSPACE_CONTEXT_BOUNDS.folders) {
        this.note(
          `folders past the first ${WORKSPACE_CONTEXT_BOUNDS.folders} were not looked into for ${PATH_RULES_FILE} rules`,
        );
        return;
      }
      visited += 1;
      for (const entry of await this.#entries(folder.path)) {
        const path = folder.path === '' ? entry.name : posix.join(folder.path, entry.name);
        if (
          entry.isDirectory() &&
          !entry.name.startsWith('.') &&
          !SKIPPED_FOLDERS.has(entry.name) &&
          folder.depth < WORKSPACE_CONTEXT_BOUNDS.depth
        ) {
          queue.push({ path, depth: folder.depth + 1 });
        } else if (entry.isFile() && entry.name === PATH_RULES_FILE && folder.path !== '') {
          if (this.payload.rules.length >= WORKSPACE_CONTEXT_BOUNDS.rules) {
            this.note(`${path} was left out: at most ${WORKSPACE_CONTEXT_BOUNDS.rules} rules are read`);
            continue;
          }
          const file = await this.text(path, WORKSPACE_CONTEXT_BOUNDS.fileChars);
          if (file)
            this.payload.rules.push({ path, content: file.content, truncated: file.truncated, folder: folder.path });
        }
      }
    }
  }

  /** A folder's entries (relative path), sorted by name, symlinks left out; none when it is missing or not a folder. */
  async #entries(path: string): Promise<{ readonly name: string; isFile(): boolean; isDirectory(): boolean }[]> {
    let host: string;
    try {
      host = path === '' ? this.workspace.root : await this.workspace.resolvePath(path);
    } catch {
      return [];
    }
    // resolvePath follows a symlink that stays inside; a folder reached through one is someone else's view: skip it
    if (relative(this.workspace.root, host).split(sep).join('/') !== path) return [];
    const entries = [];
    try {
      const folder = await opendir(host);
      for await (const entry of folder) {
        if (entry.isSymbolicLink()) continue;
        entries.push(entry);
        if (entries.length >= WORKSPACE_CONTEXT_BOUNDS.entriesPerFolder) {
          this.note(
            `${path || 'the workspace root'} has more than ${WORKSPACE_CONTEXT_BOUNDS.entriesPerFolder} entries: only some were looked at`,
          );
          break;
        }
      }
    } catch {
      return [];
    }
    return entries.sort((first, second) => (first.name < second.name ? -1 : first.name > second.name ? 1 : 0));
  }
}

function clip(text: string, limit: number): string {
  return text.length > limit ? text.slice(0, limit) : text;
}
