import type { Sandbox } from '@flotilla/sandbox';
import path from 'node:path';
import type { Readable } from 'node:stream';

/**
 * `git status` and `git diff` of a repository in a conversation's workspace, run INSIDE its
 * sandbox: a repository's config and attributes are the agent's (`core.fsmonitor`, a clean
 * filter, an external diff each run a command of its choosing), so git runs where the agent's own
 * commands run, never in the service. The options that make git run a configured command are
 * turned off where they can be (no external diff, no textconv, no fsmonitor); what remains (a
 * clean filter) runs confined, and within the time bound.
 */

/** The empty tree's id: what a repository without a commit is compared with. */
const EMPTY_TREE = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';

export const GIT_TIMEOUT_MS = 30_000;
const STDERR_BYTES = 8 * 1024;

/** Settings every git here runs with, as environment (GIT_CONFIG_COUNT: command-line config, which git trusts). */
const GIT_CONFIG: readonly (readonly [string, string])[] = [
  // the workspace belongs to the sandbox's user, who runs git: ownership checks have nothing to protect here
  ['safe.directory', '*'],
  ['core.quotepath', 'off'],
  ['core.fsmonitor', 'false'],
  ['core.untrackedCache', 'false'],
  ['color.ui', 'never'],
];

function gitEnvironment(workspacePath: string): Record<string, string> {
  return {
    GIT_CONFIG_COUNT: String(GIT_CONFIG.length),
    ...Object.fromEntries(
      GIT_CONFIG.flatMap(([key, value], index) => [
        [`GIT_CONFIG_KEY_${index}`, key],
        [`GIT_CONFIG_VALUE_${index}`, value],
      ]),
    ),
    // no repository above the workspace is ever found; no lock is taken for a read (the agent's own git may hold the index)
    GIT_CEILING_DIRECTORIES: path.posix.dirname(workspacePath),
    GIT_OPTIONAL_LOCKS: '0',
    GIT_TERMINAL_PROMPT: '0',
    GIT_PAGER: 'cat',
    PAGER: 'cat',
    LC_ALL: 'C.UTF-8',
  };
}

/** The diff options that keep git's own output true to the files (and run nothing configured). */
const DIFF_OPTIONS = '--no-ext-diff --no-textconv --no-color --src-prefix=a/ --dst-prefix=b/';

/** Both scripts print the repository's root first (NUL-terminated), and run from it on the folder asked for (its prefix). */
const STATUS_SCRIPT = [
  'cd -- "$1" 2>/dev/null || exit 3',
  'top=$(git rev-parse --show-toplevel 2>/dev/null) || exit 4',
  'prefix=$(git rev-parse --show-prefix) || exit 5',
  'cd -- "$top" || exit 3',
  'printf \'%s\\0\' "$top"',
  'exec git status --porcelain=v2 -z --branch --untracked-files=all -- "./$prefix"',
].join('\n');

const DIFF_SCRIPT = [
  'cd -- "$1" 2>/dev/null || exit 3',
  'top=$(git rev-parse --show-toplevel 2>/dev/null) || exit 4',
  'prefix=$(git rev-parse --show-prefix) || exit 5',
  'cd -- "$top" || exit 3',
  `if git rev-parse -q --verify HEAD >/dev/null; then base=HEAD; else base=${EMPTY_TREE}; fi`,
  'printf \'%s\\0%s\\0\' "$top" "$base"',
  `git diff ${DIFF_OPTIONS} --no-relative "$base" -- "./$prefix" || exit 5`,
  // each untracked file as new (git diff --no-index exits 1 when files differ, which they do)
  `git ls-files -z --others --exclude-standard -- "./$prefix" | xargs -0 -r -n 64 sh -c 'for f; do git diff --no-index ${DIFF_OPTIONS} -- /dev/null "$f"; done; exit 0' sh`,
  'exit 0',
].join('\n');

export type GitFailure = { readonly failure: 'not_a_git_repository' | 'git_failed'; readonly message: string };

type GitRun = {
  readonly stdout: Buffer;
  readonly cut: boolean;
  readonly code: number | null;
  readonly stderr: string;
  readonly timedOut: boolean;
};

/** Runs one of the scripts in the sandbox, in `folder` (as the sandbox sees it), reading at most `readBytes` of what it prints. */
async function runScript(sandbox: Sandbox, script: string, folder: string, readBytes: number): Promise<GitRun> {
  const child = await sandbox.spawn('sh', ['-c', script, 'sh', folder], { env: gitEnvironment(sandbox.workspacePath) });
  child.stdin.end();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.signal('SIGKILL');
  }, GIT_TIMEOUT_MS);
  try {
    const [stdout, stderr] = await Promise.all([
      readBounded(child.stdout, readBytes, () => child.signal('SIGKILL')),
      readBounded(child.stderr, STDERR_BYTES, () => undefined),
    ]);
    const exit = await child.exited;
    return {
      stdout: stdout.bytes,
      cut: stdout.cut,
      code: exit.code,
      stderr: stderr.bytes.toString('utf8').trim(),
      timedOut,
    };
  } finally {
    clearTimeout(timer);
  }
}

/** A stream's bytes up to `limit`; past it `onFull` is called once (to stop the writer) and the rest is drained. */
async function readBounded(
  stream: Readable,
  limit: number,
  onFull: () => void,
): Promise<{ bytes: Buffer; cut: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  let cut = false;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      if (cut) continue;
      const room = limit - size;
      if (chunk.length > room) {
        chunks.push(chunk.subarray(0, room));
        size = limit;
        cut = true;
        onFull();
        continue;
      }
      chunks.push(chunk);
      size += chunk.length;
    }
  } catch {
    // cut off by the kill: what was read counts
  }
  return { bytes: Buffer.concat(chunks), cut };
}

function failureOf(run: GitRun, what: string): GitFailure | undefined {
  if (run.timedOut)
    return {
      failure: 'git_failed',
      message: `git ${what} did not finish within ${GIT_TIMEOUT_MS / 1_000} s and was stopped.`,
    };
  if (run.code === 4)
    return {
      failure: 'not_a_git_repository',
      message: 'This folder is not in a git repository (run git init in it, or ask the agent to).',
    };
  if (run.code === 0 || (run.cut && run.code === null)) return undefined;
  return {
    failure: 'git_failed',
    message: `git ${what} failed${run.stderr ? `: ${run.stderr}` : ` (exit ${run.code ?? 'killed'})`}`,
  };
}

/** `top` (as the sandbox sees it) relative to the workspace root, or undefined when it is not in the workspace. */
function workspaceRelative(sandbox: Sandbox, top: string): string | undefined {
  const relative = path.posix.relative(sandbox.workspacePath, top);
  if (relative.startsWith('..') || path.posix.isAbsolute(relative)) return undefined;
  return relative;
}

/** Splits `bytes` at NULs: the leading fields and the rest (undefined when fewer than `count` fields came). */
function leadingFields(bytes: Buffer, count: number): { fields: string[]; rest: Buffer } | undefined {
  const fields: string[] = [];
  let at = 0;
  for (let index = 0; index < count; index += 1) {
    const end = bytes.indexOf(0, at);
    if (end < 0) return undefined;
    fields.push(bytes.subarray(at, end).toString('utf8'));
    at = end + 1;
  }
  return { fields, rest: bytes.subarray(at) };
}

export type GitOutput = {
  /** The repository's root, relative to the workspace root (`""`: the workspace is the repository). */
  readonly repositoryRoot: string;
  /** What the diff compared with (diffs only). */
  readonly base?: 'HEAD' | 'empty_tree';
  /** What git printed after the leading fields: porcelain v2 records (status) or the diff's text. */
  readonly output: Buffer;
  /** Git printed more than was read. */
  readonly cut: boolean;
};

/**
 * `git status --porcelain=v2 -z --branch --untracked-files=all` of the repository holding
 * `folder` (a path inside the sandbox), limited to that folder; at most `maxBytes` of it.
 */
export async function gitStatus(sandbox: Sandbox, folder: string, maxBytes: number): Promise<GitOutput | GitFailure> {
  return gitOutput(sandbox, STATUS_SCRIPT, folder, maxBytes, 1, 'status');
}

/**
 * The diff of the working tree of the repository holding `folder` against HEAD (the empty tree
 * before a first commit), then each untracked file as new, limited to that folder, with paths
 * relative to the repository's root; at most `maxBytes` of it.
 */
export async function gitDiff(sandbox: Sandbox, folder: string, maxBytes: number): Promise<GitOutput | GitFailure> {
  return gitOutput(sandbox, DIFF_SCRIPT, folder, maxBytes, 2, 'diff');
}

async function gitOutput(
  sandbox: Sandbox,
  script: string,
  folder: string,
  maxBytes: number,
  leading: number,
  what: string,
): Promise<GitOutput | GitFailure> {
  // room for the leading fields (a path each) besides what is kept
  const run = await runScript(sandbox, script, folder, maxBytes + leading * 4_200);
  const failure = failureOf(run, what);
  if (failure) return failure;
  const lead = leadingFields(run.stdout, leading);
  if (!lead) return { failure: 'git_failed', message: `git ${what} printed nothing readable.` };
  const top = lead.fields[0]!;
  const repositoryRoot = workspaceRelative(sandbox, top);
  if (repositoryRoot === undefined)
    return { failure: 'git_failed', message: `The repository's work tree (${top}) is not inside the workspace.` };
  const cut = run.cut || lead.rest.length > maxBytes;
  const output = lead.rest.subarray(0, maxBytes);
  return {
    repositoryRoot,
    output,
    cut,
    ...(leading > 1 ? { base: lead.fields[1] === 'HEAD' ? ('HEAD' as const) : ('empty_tree' as const) } : {}),
  };
}
