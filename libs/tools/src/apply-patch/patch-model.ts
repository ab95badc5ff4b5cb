/** One line of a hunk: kept (' '), removed ('-') or added ('+'). */
export type HunkLine = { readonly op: ' ' | '-' | '+'; readonly text: string };

export type Hunk = {
  /** OpenAI format: the text after `@@`, a line to find before the hunk (e.g. a function signature). */
  readonly anchor?: string;
  /** Unified diff: the old start line from `@@ -l,s +l,s @@`. */
  readonly oldStart?: number;
  /** The hunk must match at the end of the file (`*** End of File`). */
  readonly atEndOfFile?: boolean;
  readonly lines: readonly HunkLine[];
};

export type FileChange =
  | { readonly kind: 'add'; readonly path: string; readonly content: string }
  | { readonly kind: 'delete'; readonly path: string }
  | { readonly kind: 'update'; readonly path: string; readonly moveTo?: string; readonly hunks: readonly Hunk[] };

export type ParsedPatch =
  { readonly ok: true; readonly changes: readonly FileChange[] } | { readonly ok: false; readonly message: string };
