/**
 * The search worker: plain JavaScript run with `new Worker(SEARCH_WORKER_SOURCE, { eval: true })`.
 *
 * It is a string, not a module file, so that it runs the same from the TypeScript sources (vitest,
 * tsx) and from a service bundled by esbuild into one `.mjs`, where no worker file would sit beside
 * the bundle. It must therefore be self-contained: node built-ins only, reached through
 * `process.getBuiltinModule` (Node ≥ 20.16) because an eval'd worker may be run as CommonJS or as an
 * ES module (Node detects module syntax), and the `ignore` package loaded from the absolute path the
 * main thread resolved (`workerData.ignoreModule`). No template literals inside: it is a String.raw.
 *
 * `workerData` is a `SearchRequest` (run-search.ts); the one reply is a `GrepReply` or `GlobReply`.
 * The walk never follows symlinks (only regular files and real directories are entered or read,
 * and files are opened with O_NOFOLLOW | O_NONBLOCK so a swapped-in symlink or FIFO cannot hang a
 * read), skips hidden entries, node_modules and what .gitignore files ignore, and stops at the
 * limits on files, directories and directory entries.
 */
export const SEARCH_WORKER_SOURCE = String.raw`
'use strict';
const { parentPort, workerData } = process.getBuiltinModule('node:worker_threads');
const fs = process.getBuiltinModule('node:fs');
const path = process.getBuiltinModule('node:path');
const { createRequire } = process.getBuiltinModule('node:module');

const request = workerData;
const createIgnore = createRequire(request.ignoreModule)(request.ignoreModule);
const OPEN_FLAGS = fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW || 0) | (fs.constants.O_NONBLOCK || 0);
const MAX_IGNORE_FILE_BYTES = 1024 * 1024;
const SKIPPED_DIRECTORIES = new Set(['node_modules']);
const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * The bytes of a regular file of at most maxBytes, or undefined (missing, special, too large, or
 * a symlink unless followSymlink: only a file asked for by name is read through a symlink).
 */
function readRegularFile(file, maxBytes, followSymlink) {
  let descriptor;
  try {
    descriptor = fs.openSync(file, followSymlink ? OPEN_FLAGS & ~(fs.constants.O_NOFOLLOW || 0) : OPEN_FLAGS);
  } catch {
    return undefined;
  }
  try {
    const info = fs.fstatSync(descriptor);
    if (!info.isFile() || info.size > maxBytes) return undefined;
    const bytes = Buffer.allocUnsafe(info.size);
    let filled = 0;
    while (filled < info.size) {
      const count = fs.readSync(descriptor, bytes, filled, info.size - filled, null);
      if (count === 0) break;
      filled += count;
    }
    return bytes.subarray(0, filled);
  } catch {
    return undefined;
  } finally {
    fs.closeSync(descriptor);
  }
}

/** Text if the bytes look like text (no NUL in the first 8 KiB, valid UTF-8), as decodeText does. */
function decodeText(bytes) {
  if (bytes.subarray(0, 8192).includes(0)) return undefined;
  try {
    return decoder.decode(bytes);
  } catch {
    return undefined;
  }
}

function toPosix(relative) {
  return path.sep === '/' ? relative : relative.split(path.sep).join('/');
}

/** A matcher for one ignore file, or undefined when the file is missing or has no rules. */
function loadRules(file, base) {
  const bytes = readRegularFile(file, MAX_IGNORE_FILE_BYTES, false);
  if (bytes === undefined) return undefined;
  const rules = createIgnore({ ignoreCase: false }).add(bytes.toString('utf8'));
  return { base, rules };
}

/** The matchers that apply inside directory (base relative to the workspace root), deepest last. */
function withDirectoryRules(directory, base, matchers) {
  const own = loadRules(path.join(directory, '.gitignore'), base);
  return own === undefined ? matchers : matchers.concat([own]);
}

/** Whether a path (relative to the workspace root) is ignored: the deepest file with a verdict decides. */
function isIgnored(relative, isDirectory, matchers) {
  for (let index = matchers.length - 1; index >= 0; index -= 1) {
    const matcher = matchers[index];
    const local = matcher.base === '' ? relative : relative.slice(matcher.base.length + 1);
    if (local === '') continue;
    let verdict;
    try {
      verdict = matcher.rules.test(isDirectory ? local + '/' : local);
    } catch {
      continue;
    }
    if (verdict.ignored) return true;
    if (verdict.unignored) return false;
  }
  return false;
}

/**
 * The matchers in force at the search root: .git/info/exclude and every .gitignore from the
 * workspace root down to the search root. A search root that these rules ignore was asked for
 * explicitly, so the rules of the directories above it are dropped (its own and nested ones stay).
 */
function rootMatchers(searchDirectory) {
  const workspaceRoot = request.workspaceRoot;
  const relativeRoot = toPosix(path.relative(workspaceRoot, searchDirectory));
  const segments = relativeRoot === '' ? [] : relativeRoot.split('/');
  let matchers = [];
  const exclude = loadRules(path.join(workspaceRoot, '.git', 'info', 'exclude'), '');
  if (exclude !== undefined) matchers.push(exclude);
  for (let depth = 0; depth <= segments.length; depth += 1) {
    const base = segments.slice(0, depth).join('/');
    if (depth === segments.length && depth > 0 && isIgnored(relativeRoot, true, matchers)) matchers = [];
    matchers = withDirectoryRules(path.join(workspaceRoot, ...segments.slice(0, depth)), base, matchers);
  }
  return matchers;
}

/**
 * Call onFile(absolute, relativeToSearchRoot, explicit) for each file the search may look at, depth
 * first with directories in name order; explicit when the search root is that file. Returns why the
 * walk stopped early, or null.
 */
function walk(onFile) {
  const root = request.searchRoot;
  if (fs.statSync(root).isFile()) {
    onFile(root, path.basename(root), true);
    return null;
  }
  let files = 0;
  let directories = 0;
  let entries = 0;
  const pending = [{ directory: root, matchers: rootMatchers(root) }];
  while (pending.length > 0) {
    if (directories >= request.maxDirectories) return 'directories';
    directories += 1;
    const item = pending.pop();
    const base = toPosix(path.relative(request.workspaceRoot, item.directory));
    const matchers = item.directory === root ? item.matchers : withDirectoryRules(item.directory, base, item.matchers);
    let handle;
    try {
      handle = fs.opendirSync(item.directory);
    } catch {
      continue;
    }
    const subdirectories = [];
    let stopped = null;
    try {
      for (let entry = handle.readSync(); entry !== null; entry = handle.readSync()) {
        entries += 1;
        if (entries > request.maxEntries) {
          stopped = 'entries';
          break;
        }
        if (entry.name.startsWith('.')) continue;
        const relative = base === '' ? entry.name : base + '/' + entry.name;
        if (entry.isDirectory()) {
          if (SKIPPED_DIRECTORIES.has(entry.name) || isIgnored(relative, true, matchers)) continue;
          subdirectories.push(entry.name);
        } else if (entry.isFile()) {
          if (isIgnored(relative, false, matchers)) continue;
          const absolute = path.join(item.directory, entry.name);
          onFile(absolute, toPosix(path.relative(root, absolute)), false);
          files += 1;
          if (files >= request.maxFiles) {
            stopped = 'files';
            break;
          }
        }
      }
    } catch {
      // the directory vanished or became unreadable while it was read: keep what was seen
    } finally {
      handle.closeSync();
    }
    if (stopped !== null) return stopped;
    subdirectories.sort((a, b) => b.localeCompare(a));
    for (const name of subdirectories) pending.push({ directory: path.join(item.directory, name), matchers });
  }
  return null;
}

/** Newest first; files that vanished sort last; ties by path. */
function sortByMtime(files) {
  for (const file of files) {
    const info = fs.lstatSync(file.absolute, { throwIfNoEntry: false });
    file.mtime = info === undefined ? 0 : info.mtimeMs;
  }
  return files.sort((a, b) => b.mtime - a.mtime || a.relative.localeCompare(b.relative));
}

function grep() {
  const regex = new RegExp(request.pattern.source, request.pattern.flags);
  const include = request.include === null ? null : new RegExp(request.include.source, request.include.flags);
  const candidates = [];
  const truncated = walk((absolute, relative, explicit) => {
    if (include === null || include.test(relative)) candidates.push({ absolute, relative, explicit });
  });
  const lines = [];
  let matchCount = 0;
  let filesWithMatches = 0;
  for (const file of sortByMtime(candidates)) {
    if (matchCount >= request.maxResults) break;
    const bytes = readRegularFile(file.absolute, request.maxFileBytes, file.explicit);
    if (bytes === undefined) continue;
    const text = decodeText(bytes);
    if (text === undefined) continue;
    const shownPath = toPosix(path.relative(request.workspaceRoot, file.absolute)) || file.relative;
    let fileMatched = false;
    const fileLines = text.split('\n');
    for (let index = 0; index < fileLines.length && matchCount < request.maxResults; index += 1) {
      const line = fileLines[index];
      if (!regex.test(line)) continue;
      fileMatched = true;
      matchCount += 1;
      const shown = line.length > request.maxLineChars ? line.slice(0, request.maxLineChars) + '\u2026' : line;
      lines.push(shownPath + ':' + (index + 1) + ': ' + shown);
    }
    if (fileMatched) filesWithMatches += 1;
  }
  return { kind: 'grep', lines, matchCount, filesWithMatches, truncated };
}

function glob() {
  const matcher = new RegExp(request.pattern.source, request.pattern.flags);
  const matches = [];
  const truncated = walk((absolute, relative) => {
    if (matcher.test(relative)) matches.push({ absolute, relative });
  });
  const paths = sortByMtime(matches).slice(0, request.maxResults).map((file) => file.absolute);
  return { kind: 'glob', paths, count: matches.length, truncated };
}

parentPort.postMessage(request.kind === 'grep' ? grep() : glob());
`;
