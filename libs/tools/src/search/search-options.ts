export type SearchToolOptions = {
  /** Matches (grep) or paths (glob) shown; default 100. */
  readonly maxResults?: number;
  /** Files a walk looks at before it stops and says the listing was truncated; default 50,000. */
  readonly maxFiles?: number;
  /** Directories a walk enters before it stops likewise; default 10,000. */
  readonly maxDirectories?: number;
  /** Time a search may take before its worker is terminated and the tool fails; default 10 s. */
  readonly timeoutMs?: number;
};

export type SearchLimits = Required<SearchToolOptions> & {
  /** Directory entries of any kind (hidden, ignored, special) a walk reads before it stops. */
  readonly maxEntries: number;
};

export function searchLimits(options: SearchToolOptions): SearchLimits {
  const maxFiles = options.maxFiles ?? 50_000;
  const maxDirectories = options.maxDirectories ?? 10_000;
  return {
    maxResults: options.maxResults ?? 100,
    maxFiles,
    maxDirectories,
    maxEntries: 10 * (maxFiles + maxDirectories),
    timeoutMs: options.timeoutMs ?? 10_000,
  };
}
