import { z } from 'zod';
import { errorResult, textResult } from '../core/result.js';
import type { ToolDefinition } from '../core/tool-definition.js';
import { defineTool } from '../core/tool-definition.js';
import { globToRegExp } from './glob-pattern.js';
import { runSearch } from './run-search.js';
import { truncationNote, unfinishedSearchResult } from './search-notes.js';
import { searchLimits } from './search-options.js';
import type { SearchToolOptions } from './search-options.js';
import { resolveSearchRoot } from './search-path.js';

export type { SearchToolOptions } from './search-options.js';

export const GrepParameters = z.object({
  pattern: z
    .string()
    .min(1)
    .describe('A JavaScript regular expression searched line by line, e.g. "function\\s+\\w+".'),
  path: z
    .string()
    .optional()
    .describe('File or directory to search (absolute or relative to the workspace root). Defaults to the root.'),
  include: z.string().optional().describe('Only search files matching this glob, e.g. "*.ts" or "src/**/*.{ts,tsx}".'),
  case_sensitive: z.boolean().default(true).describe('Set false for a case-insensitive search.'),
});
export type GrepParameters = z.infer<typeof GrepParameters>;

const MAX_LINE_CHARS = 300;
const MAX_FILE_BYTES = 5 * 1024 * 1024;

/**
 * grep: the walk and the matching run in a worker thread (run-search.ts), bounded in time, so a
 * pattern that backtracks or a huge tree cannot block the tool runner.
 */
export function createGrepTool(options: SearchToolOptions = {}): ToolDefinition<GrepParameters> {
  const limits = searchLimits(options);
  const { maxResults } = limits;
  return defineTool({
    name: 'grep',
    description: `Search file contents with a regular expression. Returns matching lines as path:line: text, files most recently modified first, at most ${maxResults} matches. Hidden directories, node_modules and files ignored by .gitignore are skipped.`,
    parameters: GrepParameters,
    annotations: { readOnly: true, destructive: false, idempotent: true, openWorld: false },
    resources: () => [],
    async execute(params, context) {
      let regex: RegExp;
      try {
        regex = new RegExp(params.pattern, params.case_sensitive ? '' : 'i');
      } catch (error) {
        return errorResult(
          `Invalid regular expression ${JSON.stringify(params.pattern)}: ${(error as Error).message}. Escape special characters such as ( [ { . * + ? with a backslash.`,
        );
      }
      const resolved = await resolveSearchRoot(params.path, context);
      if (!resolved.ok) return resolved.result;
      const include = params.include === undefined ? null : globToRegExp(params.include);
      const outcome = await runSearch(
        {
          kind: 'grep',
          workspaceRoot: context.workspace.root,
          searchRoot: resolved.root,
          pattern: { source: regex.source, flags: regex.flags },
          include: include === null ? null : { source: include.source, flags: include.flags },
          maxResults,
          maxFiles: limits.maxFiles,
          maxDirectories: limits.maxDirectories,
          maxEntries: limits.maxEntries,
          maxLineChars: MAX_LINE_CHARS,
          maxFileBytes: MAX_FILE_BYTES,
        },
        { timeoutMs: limits.timeoutMs, signal: context.signal },
      );
      if (!outcome.ok)
        return unfinishedSearchResult(
          outcome.reason,
          limits,
          'Narrow the path or the include glob, or simplify the pattern.',
        );
      const { lines, matchCount, filesWithMatches, truncated } = outcome.reply;
      if (matchCount === 0) {
        const notes = truncationNote(truncated, limits, 'searched');
        return textResult(
          [`No matches for ${JSON.stringify(params.pattern)} in ${resolved.root}.`, ...notes].join('\n'),
          { matches: 0, ...(notes.length > 0 ? { truncated: true } : {}) },
        );
      }
      const notes: string[] = [];
      if (matchCount >= maxResults)
        notes.push(`[Stopped at ${maxResults} matches; narrow the pattern, path or include glob.]`);
      notes.push(...truncationNote(truncated, limits, 'searched'));
      const header = `${matchCount} match(es) in ${filesWithMatches} file(s) (paths relative to ${context.workspace.root}):`;
      return textResult([header, ...lines, ...notes].join('\n'), { matches: matchCount, truncated: notes.length > 0 });
    },
  });
}
