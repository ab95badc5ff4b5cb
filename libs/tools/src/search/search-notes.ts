import { ToolErrorCode } from '../core/errors.js';
import type { ToolResult } from '../core/result.js';
import { errorResult } from '../core/result.js';
import type { SearchLimits } from './search-options.js';
import type { WalkTruncation } from './run-search.js';

/** The note for a walk that stopped at a limit, or none. */
export function truncationNote(truncated: WalkTruncation | null, limits: SearchLimits, verb: string): string[] {
  if (truncated === 'files') return [`[Only the first ${limits.maxFiles} files were ${verb}.]`];
  if (truncated === 'directories')
    return [`[Only the first ${limits.maxDirectories} directories were ${verb}; narrow the path.]`];
  if (truncated === 'entries')
    return [
      `[The listing stopped after ${limits.maxEntries} directory entries (mostly hidden, ignored or special files); narrow the path.]`,
    ];
  return [];
}

/** The error result of a search that did not finish. */
export function unfinishedSearchResult(
  reason: 'timeout' | 'cancelled' | 'memory',
  limits: SearchLimits,
  advice: string,
): ToolResult {
  if (reason === 'cancelled') return errorResult('The search was cancelled (the run was paused or stopped).');
  if (reason === 'memory')
    return errorResult(`The search needed more memory than it may use and was stopped. ${advice}`);
  return errorResult(
    `The search took longer than ${limits.timeoutMs / 1000} s and was stopped: probably a regular expression that backtracks (nested quantifiers such as (a+)+) or a huge directory tree. ${advice}`,
    { error_code: ToolErrorCode.Timeout },
  );
}
