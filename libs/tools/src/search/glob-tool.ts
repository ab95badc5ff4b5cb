import { z } from 'zod';
import { textResult } from '../core/result.js';
import type { ToolDefinition } from '../core/tool-definition.js';
import { defineTool } from '../core/tool-definition.js';
import { globToRegExp } from './glob-pattern.js';
import { runSearch } from './run-search.js';
import { truncationNote, unfinishedSearchResult } from './search-notes.js';
import type { SearchToolOptions } from './search-options.js';
import { searchLimits } from './search-options.js';
import { resolveSearchRoot } from './search-path.js';

export const GlobParameters = z.object({
  pattern: z
    .string()
    .min(1)
    .describe('Glob relative to `path`, e.g. "**/*.ts", "src/*.{js,json}" or "README*" (no slash: any depth).'),
  path: z
    .string()
    .optional()
    .describe('Directory to search (absolute or relative to the workspace root). Defaults to the root.'),
});
export type GlobParameters = z.infer<typeof GlobParameters>;

/** glob: the walk runs in a worker thread (run-search.ts), bounded in time like grep's. */
export function createGlobTool(options: SearchToolOptions = {}): ToolDefinition<GlobParameters> {
  const limits = searchLimits(options);
  const { maxResults } = limits;
  return defineTool({
    name: 'glob',
    description: `Find files by name pattern. Returns absolute paths, most recently modified first, at most ${maxResults}. Hidden directories, node_modules and files ignored by .gitignore are skipped.`,
    parameters: GlobParameters,
    annotations: { readOnly: true, destructive: false, idempotent: true, openWorld: false },
    resources: () => [],
    async execute(params, context) {
      const resolved = await resolveSearchRoot(params.path, context);
      if (!resolved.ok) return resolved.result;
      const matcher = globToRegExp(params.pattern);
      const outcome = await runSearch(
        {
          kind: 'glob',
          workspaceRoot: context.workspace.root,
          searchRoot: resolved.root,
          pattern: { source: matcher.source, flags: matcher.flags },
          maxResults,
          maxFiles: limits.maxFiles,
          maxDirectories: limits.maxDirectories,
          maxEntries: limits.maxEntries,
        },
        { timeoutMs: limits.timeoutMs, signal: context.signal },
      );
      if (!outcome.ok)
        return unfinishedSearchResult(outcome.reason, limits, 'Narrow the path or use a more specific pattern.');
      const { paths, count, truncated } = outcome.reply;
      if (count === 0) {
        const notes = truncationNote(truncated, limits, 'examined');
        return textResult(
          [`No files match ${JSON.stringify(params.pattern)} in ${resolved.root}.`, ...notes].join('\n'),
          { count: 0, ...(notes.length > 0 ? { truncated: true } : {}) },
        );
      }
      const notes: string[] = [];
      if (count > maxResults)
        notes.push(`[${count - maxResults} more files match; use a more specific pattern or path.]`);
      notes.push(...truncationNote(truncated, limits, 'examined'));
      return textResult([...paths, ...notes].join('\n'), { count, truncated: notes.length > 0 });
    },
  });
}
