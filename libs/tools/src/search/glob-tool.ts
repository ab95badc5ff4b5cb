import { z } from 'zod';
import { textResult } from '../core/result.js';
import type { ToolDefinition } from '../core/tool-definition.js';
import { defineTool } from '../core/tool-definition.js';
import type { SearchToolOptions } from './grep-tool.js';
import { globToRegExp } from './glob-pattern.js';
import { resolveSearchRoot } from './search-path.js';
import { sortByMtime, walkFiles } from './walk-files.js';

export const GlobParameters = z.object({
  pattern: z.string().min(1).describe('Glob relative to `path`, e.g. "**/*.ts", "src/*.{js,json}" or "README*" (no slash: any depth).'),
  path: z.string().optional().describe('Directory to search (absolute or relative to the workspace root). Defaults to the root.'),
});
export type GlobParameters = z.infer<typeof GlobParameters>;

export function createGlobTool(options: SearchToolOptions = {}): ToolDefinition<GlobParameters> {
  const maxResults = options.maxResults ?? 100;
  const maxFiles = options.maxFiles ?? 50_000;
  return defineTool({
    name: 'glob',
    description: `Find files by name pattern. Returns absolute paths, most recently modified first, at most ${maxResults}. Hidden directories and node_modules are skipped.`,
    parameters: GlobParameters,
    annotations: { readOnly: true, destructive: false, idempotent: true, openWorld: false },
    resources: () => [],
    async execute(params, context) {
      const resolved = await resolveSearchRoot(params.path, context);
      if (!resolved.ok) return resolved.result;
      const matcher = globToRegExp(params.pattern);
      const walked = await walkFiles(resolved.root, { maxFiles, signal: context.signal });
      const matches = await sortByMtime(walked.files.filter((file) => matcher.test(file.relative)));
      if (matches.length === 0) return textResult(`No files match ${JSON.stringify(params.pattern)} in ${resolved.root}.`, { count: 0 });
      const shown = matches.slice(0, maxResults).map((file) => file.absolute);
      const notes: string[] = [];
      if (matches.length > maxResults) notes.push(`[${matches.length - maxResults} more files match; use a more specific pattern or path.]`);
      if (walked.truncated) notes.push(`[Only the first ${maxFiles} files were examined.]`);
      return textResult([...shown, ...notes].join('\n'), { count: matches.length, truncated: notes.length > 0 });
    },
  });
}
