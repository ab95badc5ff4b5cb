import { posix } from 'node:path';
import type { ActionEvent, EventDraft, PathRule } from '@flotilla/events';
import { parsePatch } from '@flotilla/tools';
import type { SkillsFold } from './skills-fold.js';

/**
 * The paths an action names (as the model wrote them): a `path` argument (the file editor, the
 * search tools) and the files of an `apply_patch` patch. The terminal's commands are not read
 * for paths: a rule arrives with the first file tool touching its folder, as in OpenHands.
 */
export function actionPaths(action: ActionEvent): string[] {
  const input = action.input ?? {};
  const paths: string[] = [];
  if (typeof input['path'] === 'string') paths.push(input['path']);
  if (action.tool_name === 'apply_patch' && typeof input['patch'] === 'string') {
    const parsed = parsePatch(input['patch']);
    if (parsed.ok)
      for (const change of parsed.changes)
        paths.push(change.path, ...(change.kind === 'update' && change.moveTo !== undefined ? [change.moveTo] : []));
  }
  return paths;
}

/**
 * Adds to a batch's observations the path rules (nested AGENTS.md files) that apply to what their
 * actions touched and that the conversation has not been shown yet: each rule once per
 * conversation, with the first observation of an action touching its folder. `touched` gives an
 * action's paths relative to the workspace root (the caller resolves them in its workspace). The
 * rule's text is appended to the observation's content, and its path to `details.path_rules`
 * (how the log remembers it was shown).
 */
export function withPathRules(
  actions: readonly ActionEvent[],
  drafts: readonly EventDraft[],
  skills: SkillsFold,
  touched: (action: ActionEvent) => readonly string[],
): EventDraft[] {
  const rules = skills.context?.rules ?? [];
  if (rules.length === 0) return [...drafts];
  const shown = new Set(skills.appliedRules);
  return drafts.map((draft) => {
    if (draft.type !== 'observation') return draft;
    const action = actions.find((candidate) => candidate.id === draft.action_id);
    if (!action) return draft;
    const paths = touched(action);
    const matching = rules.filter((rule) => !shown.has(rule.path) && paths.some((path) => inFolder(path, rule.folder)));
    if (matching.length === 0) return draft;
    for (const rule of matching) shown.add(rule.path);
    const applied = [
      ...(Array.isArray(draft.details?.['path_rules']) ? (draft.details['path_rules'] as string[]) : []),
      ...matching.map((rule) => rule.path),
    ];
    return {
      ...draft,
      content: [...draft.content, ...matching.map((rule) => ({ type: 'text' as const, text: ruleText(rule) }))],
      details: { ...draft.details, path_rules: applied },
    };
  });
}

function inFolder(path: string, folder: string): boolean {
  const normal = posix.normalize(path);
  return normal === folder || normal.startsWith(`${folder}/`);
}

function ruleText(rule: PathRule): string {
  return `[Rules for ${rule.folder}/ from ${rule.path}; they apply to every file under that folder:]\n${rule.content.trim()}${rule.truncated ? '\n[…the rest of the file was cut]' : ''}`;
}

/**
 * A path an action named, relative to the workspace root, or undefined when it is outside: a
 * relative path is the workspace's already, an absolute one is taken against each of `roots` (the
 * root as the agent sees it, `/workspace`, and as this host does).
 */
export function workspaceRelative(path: string, roots: readonly string[]): string | undefined {
  if (!posix.isAbsolute(path)) {
    const normal = posix.normalize(path);
    return normal === '..' || normal.startsWith('../') ? undefined : normal.replace(/^\.\/?/u, '');
  }
  for (const root of roots) {
    const relative = posix.relative(root, posix.normalize(path));
    if (!relative.startsWith('..') && !posix.isAbsolute(relative)) return relative;
  }
  return undefined;
}
