import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { errorResult, textResult } from '../core/result.js';
import type { ToolDefinition } from '../core/tool-definition.js';
import { defineTool } from '../core/tool-definition.js';
import { decodeText } from '../file-editor/text-file.js';
import { globToRegExp } from './glob-pattern.js';
import { resolveSearchRoot } from './search-path.js';
import { sortByMtime, walkFiles } from './walk-files.js';

export const GrepParameters = z.object({
  pattern: z.string().min(1).describe('A JavaScript regular expression searched line by line, e.g. "function\\s+\\w+".'),
  path: z.string().optional().describe('File or directory to search (absolute or relative to the workspace root). Defaults to the root.'),
  include: z.string().optional().describe('Only search files matching this glob, e.g. "*.ts" or "src/**/*.{ts,tsx}".'),
  case_sensitive: z.boolean().default(true).describe('Set false for a case-insensitive search.'),
});
export type GrepParameters = z.infer<typeof GrepParameters>;

export type SearchToolOptions = { readonly maxResults?: number; readonly maxFiles?: number };

const MAX_LINE_CHARS = 300;
const MAX_FILE_BYTES = 5 * 1024 * 1024;

export function createGrepTool(options: SearchToolOptions = {}): ToolDefinition<GrepParameters> {
  const maxResults = options.maxResults ?? 100;
  const maxFiles = options.maxFiles ?? 50_000;
  return defineTool({
    name: 'grep',
    description: `Search file contents with a regular expression. Returns matching lines as path:line: text, files most recently modified first, at most ${maxResults} matches. Hidden directories and node_modules are skipped.`,
    parameters: GrepParameters,
    annotations: { readOnly: true, destructive: false, idempotent: true, openWorld: false },
    resources: () => [],
    async execute(params, context) {
      let regex: RegExp;
      try {
        regex = new RegExp(params.pattern, params.case_sensitive ? '' : 'i');
      } catch (error) {
        return errorResult(`Invalid regular expression ${JSON.stringify(params.pattern)}: ${(error as Error).message}. Escape special characters such as ( [ { . * + ? with a backslash.`);
      }
      const resolved = await resolveSearchRoot(params.path, context);
      if (!resolved.ok) return resolved.result;
      const include = params.include === undefined ? undefined : globToRegExp(params.include);
      const walked = await walkFiles(resolved.root, { maxFiles, signal: context.signal });
      const candidates = await sortByMtime(walked.files.filter((file) => include === undefined || include.test(file.relative)));
      const lines: string[] = [];
      let matchCount = 0;
      let filesWithMatches = 0;
      for (const file of candidates) {
        if (matchCount >= maxResults || context.signal.aborted) break;
        const size = await stat(file.absolute).then((info) => info.size, () => Infinity);
        if (size > MAX_FILE_BYTES) continue;
        const text = decodeText(await readFile(file.absolute).catch(() => Buffer.alloc(0)));
        if (text === undefined) continue;
        let fileMatched = false;
        const fileLines = text.split('\n');
        for (let index = 0; index < fileLines.length && matchCount < maxResults; index += 1) {
          const line = fileLines[index] ?? '';
          if (!regex.test(line)) continue;
          fileMatched = true;
          matchCount += 1;
          const shown = line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}…` : line;
          lines.push(`${path.relative(context.workspace.root, file.absolute) || file.relative}:${index + 1}: ${shown}`);
        }
        if (fileMatched) filesWithMatches += 1;
      }
      if (matchCount === 0) return textResult(`No matches for ${JSON.stringify(params.pattern)} in ${resolved.root}.`, { matches: 0 });
      const notes: string[] = [];
      if (matchCount >= maxResults) notes.push(`[Stopped at ${maxResults} matches; narrow the pattern, path or include glob.]`);
      if (walked.truncated) notes.push(`[Only the first ${maxFiles} files were searched.]`);
      const header = `${matchCount} match(es) in ${filesWithMatches} file(s) (paths relative to ${context.workspace.root}):`;
      return textResult([header, ...lines, ...notes].join('\n'), { matches: matchCount, truncated: notes.length > 0 });
    },
  });
}
