import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { ToolError, ToolErrorCode } from '../core/errors.js';
import { SEARCH_WORKER_SOURCE } from './search-worker-source.js';

/** A regular expression as it crosses to the worker. */
export type RegExpSource = { readonly source: string; readonly flags: string };

/** Why a walk stopped before it had seen the whole tree. */
export type WalkTruncation = 'files' | 'directories' | 'entries';

type WalkRequest = {
  /** Absolute, symlink-free workspace root: output paths and .gitignore files are relative to it. */
  readonly workspaceRoot: string;
  /** Absolute file or directory inside the workspace. */
  readonly searchRoot: string;
  readonly maxFiles: number;
  readonly maxDirectories: number;
  readonly maxEntries: number;
  readonly maxResults: number;
};

export type GrepRequest = WalkRequest & {
  readonly kind: 'grep';
  readonly pattern: RegExpSource;
  /** Matched against paths relative to the search root. */
  readonly include: RegExpSource | null;
  readonly maxLineChars: number;
  readonly maxFileBytes: number;
};

export type GlobRequest = WalkRequest & { readonly kind: 'glob'; readonly pattern: RegExpSource };

export type GrepReply = {
  readonly kind: 'grep';
  /** `path:line: text`, at most maxResults. */
  readonly lines: readonly string[];
  readonly matchCount: number;
  readonly filesWithMatches: number;
  readonly truncated: WalkTruncation | null;
};

export type GlobReply = {
  readonly kind: 'glob';
  /** Absolute paths, newest first, at most maxResults. */
  readonly paths: readonly string[];
  /** Every match, shown or not. */
  readonly count: number;
  readonly truncated: WalkTruncation | null;
};

type ReplyOf<R> = R extends GrepRequest ? GrepReply : GlobReply;

/** The reply, or why there is none: over time, cancelled, or over the worker's memory bound. */
export type SearchOutcome<R> =
  | { readonly ok: true; readonly reply: R }
  | { readonly ok: false; readonly reason: 'timeout' | 'cancelled' | 'memory' };

export type SearchBounds = { readonly timeoutMs: number; readonly signal: AbortSignal };

/** Heap bound of a search worker: a runaway search fails alone instead of taking the process down. */
export const SEARCH_WORKER_HEAP_MB = 256;

let ignoreModulePath: string | undefined;

/**
 * The `ignore` package's entry file, for the worker to require. Resolved from the @flotilla/tools
 * package (where it is a dependency) rather than from this module: in a bundled service this module
 * is `services/<name>/dist/main.mjs`, from where node_modules lookups would miss
 * `libs/tools/node_modules`, or find another version, or (in the image, dev dependencies omitted)
 * nothing at all.
 */
function resolveIgnoreModule(): string {
  if (ignoreModulePath !== undefined) return ignoreModulePath;
  const here = createRequire(import.meta.url);
  try {
    ignoreModulePath = createRequire(here.resolve('@flotilla/tools')).resolve('ignore');
  } catch {
    try {
      ignoreModulePath = here.resolve('ignore');
    } catch (error) {
      throw new ToolError(
        ToolErrorCode.ExecutionFailed,
        'The search cannot load the `ignore` package (a dependency of @flotilla/tools); reinstall the dependencies (`npm ci`).',
        { cause: error },
      );
    }
  }
  return ignoreModulePath;
}

/**
 * Run a search in a worker thread so that neither a regular expression that backtracks nor a huge
 * tree can block this thread. The worker is terminated when `timeoutMs` passes or `signal` aborts.
 * A failure of the worker itself (a bug) throws.
 */
export function runSearch<R extends GrepRequest | GlobRequest>(
  request: R,
  bounds: SearchBounds,
): Promise<SearchOutcome<ReplyOf<R>>> {
  if (bounds.signal.aborted) return Promise.resolve({ ok: false, reason: 'cancelled' });
  const workerData = { ...request, ignoreModule: resolveIgnoreModule() };
  return new Promise((resolve, reject) => {
    const worker = new Worker(SEARCH_WORKER_SOURCE, {
      eval: true,
      workerData,
      // no TypeScript loader or other flags of this process: the worker is plain JavaScript
      execArgv: [],
      resourceLimits: { maxOldGenerationSizeMb: SEARCH_WORKER_HEAP_MB },
    });
    let settled = false;
    const settle = (finish: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      bounds.signal.removeEventListener('abort', onAbort);
      worker.terminate().catch(() => undefined);
      finish();
    };
    const onAbort = (): void => settle(() => resolve({ ok: false, reason: 'cancelled' }));
    const timer = setTimeout(() => settle(() => resolve({ ok: false, reason: 'timeout' })), bounds.timeoutMs);
    bounds.signal.addEventListener('abort', onAbort, { once: true });
    worker.once('message', (reply: ReplyOf<R>) => settle(() => resolve({ ok: true, reply })));
    worker.once('error', (error: Error & { code?: string }) =>
      settle(() => {
        if (error.code === 'ERR_WORKER_OUT_OF_MEMORY') resolve({ ok: false, reason: 'memory' });
        else
          reject(new ToolError(ToolErrorCode.ExecutionFailed, `The search failed: ${error.message}`, { cause: error }));
      }),
    );
    worker.once('exit', (code) =>
      settle(() =>
        reject(
          new ToolError(ToolErrorCode.ExecutionFailed, `The search stopped (exit code ${code}) without a result.`),
        ),
      ),
    );
  });
}
