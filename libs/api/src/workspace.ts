import { Timestamp, WorkspacePath } from '@flotilla/events';
import { z } from 'zod';

/**
 * A conversation's workspace as the REST API shows it: its files (listed, downloaded, uploaded)
 * and the git status and diff of a repository in it. Paths are relative to the workspace root
 * (`src/app.py`; `""` is the root itself), never absolute and never with a `..` segment: what the
 * agent sees at `/workspace/src/app.py`. The tool runner that owns the workspace answers each
 * request, confined to it (docs/api.md, "Workspace files").
 */

/** A folder or file of the workspace, as a query gives it: absent or `""` for the root. */
export const WorkspaceQueryPath = z.union([z.literal(''), WorkspacePath]);

export const ListFilesQuery = z.strictObject({ path: WorkspaceQueryPath.optional() });
export type ListFilesQuery = z.infer<typeof ListFilesQuery>;

export const FileQuery = z.strictObject({ path: WorkspacePath });
export type FileQuery = z.infer<typeof FileQuery>;

export const GitQuery = z.strictObject({ path: WorkspaceQueryPath.optional() });
export type GitQuery = z.infer<typeof GitQuery>;

/** How many entries one listing returns at most (a folder with more is listed `truncated`). */
export const MAX_LISTED_ENTRIES = 1_000;
/** How many changed paths one git status returns at most. */
export const MAX_STATUS_ENTRIES = 5_000;

export const FileType = z.enum(['file', 'directory', 'symlink', 'other']);
export type FileType = z.infer<typeof FileType>;

export const FileEntry = z.strictObject({
  name: z.string(),
  /** The entry's path, relative to the workspace root: what the other routes take. */
  path: z.string(),
  type: FileType,
  /** Bytes, for files; null for the rest. */
  size: z.number().int().nonnegative().nullable(),
  modified_at: Timestamp,
  /** Where a symlink points (as written in it; a target outside the workspace cannot be read through it). */
  link_target: z.string().optional(),
});
export type FileEntry = z.infer<typeof FileEntry>;

/** One folder's entries (one level: list a sub-folder by its path), folders first, then by name. */
export const FileListing = z.strictObject({
  path: z.string(),
  entries: z.array(FileEntry).max(MAX_LISTED_ENTRIES),
  /** More entries exist than were listed. */
  truncated: z.boolean(),
});
export type FileListing = z.infer<typeof FileListing>;

const Sha256 = z.string().regex(/^[0-9a-f]{64}$/);

/** A file put into the workspace (201 new, 200 replaced); `seq` is the `workspace_file` event that records it. */
export const UploadedFile = z.strictObject({
  path: WorkspacePath,
  size: z.number().int().nonnegative(),
  sha256: Sha256,
  created: z.boolean(),
  seq: z.number().int().positive(),
});
export type UploadedFile = z.infer<typeof UploadedFile>;

/** Where a git command ran: the folder asked for, and the repository's root, both relative to the workspace root. */
const GitPlace = {
  path: z.string(),
  repository_root: z.string(),
};

/** One changed path of `git status` (porcelain v2: `index` and `worktree` are its X and Y letters, `.` for unchanged). */
export const GitStatusEntry = z.strictObject({
  /** Relative to the workspace root. */
  path: z.string(),
  /** A rename's or copy's source. */
  original_path: z.string().optional(),
  kind: z.enum(['changed', 'renamed', 'copied', 'unmerged', 'untracked']),
  index: z.string().length(1),
  worktree: z.string().length(1),
});
export type GitStatusEntry = z.infer<typeof GitStatusEntry>;

export const GitStatus = z.strictObject({
  ...GitPlace,
  branch: z.strictObject({
    /** null when detached. */
    head: z.string().nullable(),
    /** null before the first commit. */
    oid: z.string().nullable(),
    upstream: z.string().nullable(),
    ahead: z.number().int().nonnegative().nullable(),
    behind: z.number().int().nonnegative().nullable(),
  }),
  entries: z.array(GitStatusEntry).max(MAX_STATUS_ENTRIES),
  truncated: z.boolean(),
});
export type GitStatus = z.infer<typeof GitStatus>;

/**
 * `git diff` of the working tree against HEAD (the empty tree before the first commit), then each
 * untracked file as new, under the folder asked for; paths in it are relative to the repository
 * root. Text with secrets masked; cut at a bound (`truncated`).
 */
export const GitDiff = z.strictObject({
  ...GitPlace,
  base: z.enum(['HEAD', 'empty_tree']),
  diff: z.string(),
  truncated: z.boolean(),
});
export type GitDiff = z.infer<typeof GitDiff>;
