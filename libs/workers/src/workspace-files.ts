import { createHash } from 'node:crypto';
import { createReadStream, type Stats } from 'node:fs';
import { lstat, mkdir, open, readdir, rm, stat, truncate, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { ConversationRef } from '@flotilla/log';
import {
  workspaceBodyBytes,
  workspaceChunkBytes,
  type FileVersion,
  type ListedEntry,
  type Logger,
  type WorkspaceFailureCode,
  type WorkspaceOp,
  type WorkspaceRequest,
} from '@flotilla/runtime';
import { formatBytes, workspaceUsage, type Sandbox } from '@flotilla/sandbox';
import { isToolError, ToolErrorCode, type Workspace } from '@flotilla/tools';
import type { NatsConnection } from '@nats-io/transport-node';
import { gitDiff, gitStatus } from './workspace-git.js';

/** A conversation's workspace, its sandbox and its secrets' values (what must not leave the runner), as its tools have them. */
export type OpenedWorkspace = {
  readonly workspace: Workspace;
  readonly sandbox: Sandbox;
  readonly secrets: Readonly<Record<string, string>>;
};

/** What the owning runner gives the workspace requests of one conversation. */
export type WorkspaceAccess = {
  use<T>(ref: ConversationRef, task: (opened: OpenedWorkspace) => Promise<T>): Promise<T>;
  /** The service's own directory of the conversation: uploads are kept there until their last chunk. */
  privateDir(ref: ConversationRef): string;
};

export type WorkspaceFilesOptions = {
  readonly nc: NatsConnection;
  readonly logger: Logger;
  /** Replaces secrets' values in text by their masks. */
  readonly mask?: (text: string, secrets: Readonly<Record<string, string>>) => string;
  /** Which secrets' values occur in bytes read in parts (a file handed out byte for byte cannot be masked). */
  readonly scan?: (secrets: Readonly<Record<string, string>>) => {
    push(part: Uint8Array): void;
    readonly found: readonly string[];
  };
  readonly workspaceQuotaBytes?: number;
};

/** A request's outcome: what the answer says and carries, or why it was not done. */
export type WorkspaceOutcome =
  | { readonly meta: Record<string, unknown>; readonly data?: Uint8Array }
  | { readonly code: WorkspaceFailureCode; readonly message: string };

/** Entries read from a folder at most for one listing (sorted, then the first MAX_LISTED are kept). */
const MAX_SCANNED_ENTRIES = 10_000;
const MAX_LISTED_ENTRIES = 1_000;
/** An upload whose next chunk has not come for this long is dropped. */
const STALE_UPLOAD_MS = 15 * 60_000;
const UPLOADS = 'uploads';

const refusal = (code: WorkspaceFailureCode, message: string): WorkspaceOutcome => ({ code, message });

/**
 * The owning tool runner's answers to the gateway's workspace requests (libs/runtime
 * workspace-requests.ts): listings, a file's bytes in chunks, uploads in chunks, git status and
 * diff. Every path goes through the Workspace the tools use (resolved inside the root, each folder
 * opened without following a link), git runs inside the conversation's sandbox, and what leaves
 * here holds no secret's value: text is masked, and a file holding one is not handed out.
 */
export class WorkspaceFiles {
  constructor(
    private readonly access: WorkspaceAccess,
    private readonly options: WorkspaceFilesOptions,
  ) {}

  async handle({ ref, op, data }: WorkspaceRequest): Promise<WorkspaceOutcome> {
    if (op.op === 'abort') {
      await rm(this.#staging(ref, op.upload), { force: true });
      return { meta: {} };
    }
    try {
      return await this.access.use(ref, (opened) => this.#handle(ref, op, data, opened));
    } catch (error) {
      const refused = refusalOf(error);
      if (refused) return refused;
      throw error;
    }
  }

  async #handle(
    ref: ConversationRef,
    op: Exclude<WorkspaceOp, { op: 'abort' }>,
    data: Uint8Array,
    opened: OpenedWorkspace,
  ): Promise<WorkspaceOutcome> {
    const { workspace, sandbox, secrets } = opened;
    const present = (text: string): string => (this.options.mask ? this.options.mask(text, secrets) : text);
    const resolve = (asked: string): Promise<string> =>
      asked === '' ? Promise.resolve(workspace.root) : workspace.resolvePath(asked);
    switch (op.op) {
      case 'list':
        return this.#list(workspace, await resolve(op.path), present);
      case 'read':
        return this.#read(workspace, await resolve(op.path), op, secrets);
      case 'write':
        return this.#write(ref, workspace, await resolve(op.path), op, data);
      case 'git_status':
      case 'git_diff': {
        const folder = sandbox.toInside(await resolve(op.path));
        const budget = workspaceBodyBytes(this.options.nc);
        const run =
          op.op === 'git_status' ? await gitStatus(sandbox, folder, budget) : await gitDiff(sandbox, folder, budget);
        if ('failure' in run) return refusal(run.failure, present(run.message));
        // masked as text; a mask may be longer than what it hides: what is cut is cut at a record's or a line's end
        const shown = Buffer.from(present(run.output.toString('utf8')), 'utf8');
        const truncated = run.cut || shown.length > budget;
        const output = truncated
          ? shown.subarray(0, shown.lastIndexOf(op.op === 'git_status' ? 0 : 0x0a, budget - 1) + 1)
          : shown;
        const place = { repository_root: present(run.repositoryRoot), truncated };
        return { meta: op.op === 'git_status' ? place : { ...place, base: run.base ?? 'HEAD' }, data: output };
      }
    }
  }

  async #list(workspace: Workspace, folder: string, present: (text: string) => string): Promise<WorkspaceOutcome> {
    const listing = await workspace.listDirectory(folder, {
      maxEntries: MAX_LISTED_ENTRIES,
      maxScanned: MAX_SCANNED_ENTRIES,
    });
    const entries: ListedEntry[] = listing.entries.map((entry) => ({
      name: present(entry.name),
      type: entry.type,
      size: entry.size,
      modified_ms: entry.modifiedMs,
      ...(entry.linkTarget === undefined
        ? {}
        : { link_target: present(workspace.show(entry.linkTarget)).slice(0, 8_192) }),
    }));
    // the answer stays one message: entries past what fits are left out, and the listing says it is cut
    const budget = workspaceBodyBytes(this.options.nc);
    let body = Buffer.from(JSON.stringify(entries));
    let kept = entries.length;
    while (body.length > budget && kept > 0) {
      kept = Math.floor(kept * 0.8);
      body = Buffer.from(JSON.stringify(entries.slice(0, kept)));
    }
    return { meta: { truncated: listing.truncated || kept < entries.length }, data: body };
  }

  async #read(
    workspace: Workspace,
    file: string,
    op: Extract<WorkspaceOp, { op: 'read' }>,
    secrets: Readonly<Record<string, string>>,
  ): Promise<WorkspaceOutcome> {
    const { handle, stats } = await workspace.openRegularFile(file);
    try {
      const version = versionOf(stats);
      if (op.version) {
        if (!sameVersion(op.version, version))
          return refusal('file_changed', 'The file changed while it was being downloaded; download it again.');
      } else {
        if (stats.size > op.max_size)
          return refusal(
            'too_large',
            `The file is ${formatBytes(stats.size)}, more than the ${formatBytes(op.max_size)} a download may be.`,
          );
        const found = await this.#secretsIn(handle, stats.size, secrets);
        if (found.length > 0)
          return refusal(
            'secret_in_file',
            `The file holds the value of the secret${found.length > 1 ? 's' : ''} ${found.join(', ')}, which never leaves the sandbox; remove it from the file to download it.`,
          );
        // written while it was read: what was read is no longer the file
        if (!sameVersion(version, versionOf(await handle.stat())))
          return refusal('file_changed', 'The file changed while it was being read; download it again.');
      }
      const length = Math.max(0, Math.min(op.length, workspaceChunkBytes(this.options.nc), stats.size - op.offset));
      const bytes = Buffer.alloc(length);
      let filled = 0;
      while (filled < length) {
        const { bytesRead } = await handle.read(bytes, filled, length - filled, op.offset + filled);
        if (bytesRead === 0) break;
        filled += bytesRead;
      }
      if (filled < length)
        return refusal('file_changed', 'The file became shorter while it was being downloaded; download it again.');
      return { meta: { version }, data: bytes };
    } finally {
      await handle.close();
    }
  }

  /** The names of the secrets whose values the file holds (none when there are no secrets to look for). */
  async #secretsIn(
    handle: FileHandle,
    size: number,
    secrets: Readonly<Record<string, string>>,
  ): Promise<readonly string[]> {
    if (!this.options.scan || Object.keys(secrets).length === 0) return [];
    const scanner = this.options.scan(secrets);
    const buffer = Buffer.alloc(Math.min(1024 * 1024, Math.max(1, size)));
    for (let position = 0; position < size;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
      if (bytesRead === 0) break;
      scanner.push(buffer.subarray(0, bytesRead));
      position += bytesRead;
    }
    return scanner.found;
  }

  /**
   * One chunk of an upload, kept in the conversation's private directory (outside the workspace,
   * so neither the agent nor a half-sent file reaches the target) at its offset; the final chunk
   * puts the whole upload in place of the file at once (Workspace.replaceFile).
   */
  async #write(
    ref: ConversationRef,
    workspace: Workspace,
    file: string,
    op: Extract<WorkspaceOp, { op: 'write' }>,
    data: Uint8Array,
  ): Promise<WorkspaceOutcome> {
    const staging = this.#staging(ref, op.upload);
    const quota = this.options.workspaceQuotaBytes;
    if (op.offset === 0) {
      // refused before anything is kept: a folder there, or a path through a file
      await workspace.openRegularFile(file).then(
        (opened) => opened.handle.close(),
        (error: unknown) =>
          isToolError(error) && (error.code === ToolErrorCode.NotFound || error.code === ToolErrorCode.NotARegularFile)
            ? undefined
            : Promise.reject(error),
      );
      await mkdir(path.dirname(staging), { recursive: true, mode: 0o700 });
      await this.#dropStaleUploads(path.dirname(staging));
    } else {
      const kept = await stat(staging).catch(() => undefined);
      if (!kept || kept.size < op.offset)
        return refusal(
          'upload_lost',
          'The upload was lost on the tool runner (it restarted, or the upload paused too long); send it again.',
        );
      // a chunk sent again (its answer was lost): it replaces what it had written
      if (kept.size > op.offset) await truncate(staging, op.offset);
    }
    const received = op.offset + data.length;
    if (quota !== undefined && received > quota) {
      await rm(staging, { force: true });
      return refusal('quota_exceeded', `The file is larger than the workspace's size quota of ${formatBytes(quota)}.`);
    }
    const handle = await open(staging, op.offset === 0 ? 'w' : 'r+', 0o600);
    try {
      await handle.write(data, 0, data.length, op.offset);
    } finally {
      await handle.close();
    }
    if (!op.final) return { meta: { done: false, received } };
    try {
      return await this.#place(workspace, file, staging, received);
    } finally {
      await rm(staging, { force: true });
    }
  }

  /** The whole upload in place of the file, when the workspace has room for it. */
  async #place(workspace: Workspace, file: string, staging: string, size: number): Promise<WorkspaceOutcome> {
    const quota = this.options.workspaceQuotaBytes;
    if (quota !== undefined) {
      const usage = await workspaceUsage(workspace.root, { stopAboveBytes: quota });
      const replaced = await lstat(file).then(
        (info) => (info.isFile() ? info.blocks * 512 : 0),
        () => 0,
      );
      if (usage.bytes - replaced + size > quota) {
        return refusal(
          'quota_exceeded',
          `The workspace has no room for ${formatBytes(size)} more: its size quota is ${formatBytes(quota)} (at least ${formatBytes(usage.bytes)} used). Delete files first.`,
        );
      }
    }
    const hash = createHash('sha256');
    const { created } = await workspace.replaceFile(file, async (handle) => {
      // plain reads and writes: a stream over the handle would keep it from closing
      for await (const chunk of createReadStream(staging, { highWaterMark: 1024 * 1024 }) as AsyncIterable<Buffer>) {
        hash.update(chunk);
        await handle.write(chunk);
      }
    });
    return { meta: { done: true, size, sha256: hash.digest('hex'), created } };
  }

  #staging(ref: ConversationRef, upload: string): string {
    return path.join(this.access.privateDir(ref), UPLOADS, upload);
  }

  async #dropStaleUploads(directory: string): Promise<void> {
    const now = Date.now();
    for (const name of await readdir(directory).catch(() => [])) {
      const info = await stat(path.join(directory, name)).catch(() => undefined);
      if (info && now - info.mtimeMs > STALE_UPLOAD_MS) await rm(path.join(directory, name), { force: true });
    }
  }
}

function versionOf(stats: Stats): FileVersion {
  return { ino: stats.ino, size: stats.size, mtime_ms: stats.mtimeMs, ctime_ms: stats.ctimeMs };
}

function sameVersion(a: FileVersion, b: FileVersion): boolean {
  return a.ino === b.ino && a.size === b.size && a.mtime_ms === b.mtime_ms && a.ctime_ms === b.ctime_ms;
}

/** A Workspace's refusal as the answer's code. */
function refusalOf(error: unknown): WorkspaceOutcome | undefined {
  if (!isToolError(error)) return undefined;
  switch (error.code) {
    case ToolErrorCode.PathOutsideWorkspace:
      return refusal('outside_workspace', error.message);
    case ToolErrorCode.NotFound:
      return refusal('not_found', error.message);
    case ToolErrorCode.NotADirectory:
      return refusal('not_a_directory', error.message);
    case ToolErrorCode.IsADirectory:
      return refusal('is_a_directory', error.message);
    case ToolErrorCode.NotARegularFile:
      return refusal('not_a_regular_file', error.message);
    default:
      return undefined;
  }
}
