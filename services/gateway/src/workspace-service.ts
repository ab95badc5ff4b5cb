import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { FileListing, GitDiff, GitStatus, type FileEntry, type UploadedFile } from '@flotilla/api';
import { draftEvent, withPositionalIds } from '@flotilla/events';
import { appendWithRetry, type ConversationRef, type EventLog } from '@flotilla/log';
import {
  askWorkspace,
  ListedEntry,
  workspaceChunkBytes,
  WorkspaceAnswers,
  WorkspaceRequestError,
  type RunnerRegistry,
  type WorkspaceAnswer,
  type WorkspaceOp,
} from '@flotilla/runtime';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { z } from 'zod';
import { ApiError } from './api-error.js';
import { parsePorcelainV2 } from './git-status.js';

export type WorkspaceServiceOptions = {
  /** The largest file a download or an upload may be (FLOTILLA_GATEWAY_MAX_FILE_BYTES). */
  readonly maxFileBytes: number;
};

/** A file on its way out: its size, and its bytes as they come from the tool runner, chunk by chunk. */
export type Download = { readonly size: number; readonly body: Readable };

const GIT_TIMEOUT_MS = 45_000;

/**
 * A conversation's workspace as the REST routes serve it, through the tool runner that owns it
 * (askWorkspace: the owner while it lives, else any runner, which claims it): listings, downloads
 * and uploads in chunks under NATS's max_payload, git status and diff. What a runner answers is
 * checked before it is used (it came over NATS). An upload is recorded in the log as a
 * `workspace_file` event once the file is in place.
 */
export class WorkspaceService {
  constructor(
    private readonly nc: NatsConnection,
    private readonly runners: RunnerRegistry | undefined,
    private readonly log: EventLog,
    private readonly options: WorkspaceServiceOptions,
    private readonly logger: Logger,
  ) {}

  get maxFileBytes(): number {
    return this.options.maxFileBytes;
  }

  async list(ref: ConversationRef, path: string): Promise<FileListing> {
    await this.#exists(ref);
    const answer = await this.#ask(ref, { op: 'list', path }, path);
    const { truncated } = this.#meta(answer, 'list');
    const entries = this.#json(answer, z.array(ListedEntry));
    return FileListing.parse({ path, entries: entries.map((entry) => fileEntry(path, entry)), truncated });
  }

  /**
   * The file's first chunk is read before anything is sent, so a refusal (missing, a folder, too
   * large, a secret in it) is an error answer; later chunks follow as the client reads. A file
   * that changes between chunks ends the body early (the client sees fewer bytes than its length).
   */
  async download(ref: ConversationRef, path: string): Promise<Download> {
    await this.#exists(ref);
    const chunk = workspaceChunkBytes(this.nc);
    const first = await this.#ask(
      ref,
      { op: 'read', path, offset: 0, length: chunk, max_size: this.options.maxFileBytes },
      path,
    );
    const { version } = this.#meta(first, 'read');
    const ask = (offset: number, runner: string): Promise<WorkspaceAnswer> =>
      this.#ask(ref, { op: 'read', path, offset, length: chunk, max_size: this.options.maxFileBytes, version }, path, {
        runner,
      });
    const logger = this.logger;
    async function* chunks(): AsyncGenerator<Uint8Array> {
      let answer = first;
      let offset = 0;
      for (;;) {
        if (answer.data.length === 0 && offset < version.size)
          throw new Error('the tool runner sent an empty chunk before the end of the file');
        offset += answer.data.length;
        if (offset > version.size) throw new Error('the tool runner sent more bytes than the file has');
        if (answer.data.length > 0) yield answer.data;
        if (offset >= version.size) return;
        try {
          answer = await ask(offset, answer.runner);
        } catch (error) {
          logger.warn(
            { err: error, tenant: ref.tenant, conversation: ref.conversation, offset, size: version.size },
            'a download stopped before its end',
          );
          throw error;
        }
      }
    }
    return { size: version.size, body: Readable.from(chunks(), { objectMode: false }) };
  }

  /**
   * Streams the request's bytes to the tool runner in chunks (each answered before the next is
   * sent), the last one putting the file in place; then appends `workspace_file`. Past
   * maxFileBytes the upload is dropped and refused with 413 file_too_large.
   */
  async upload(
    ref: ConversationRef,
    path: string,
    body: AsyncIterable<Uint8Array>,
    declaredBytes: number | undefined,
  ): Promise<UploadedFile> {
    const max = this.options.maxFileBytes;
    if (declaredBytes !== undefined && declaredBytes > max) throw tooLarge(max);
    await this.#exists(ref);
    const upload = randomBytes(16).toString('hex');
    const chunk = workspaceChunkBytes(this.nc);
    let runner: string | undefined;
    let offset = 0;
    const send = async (data: Buffer, final: boolean): Promise<z.infer<(typeof WorkspaceAnswers)['write']>> => {
      const answer = await this.#ask(
        ref,
        { op: 'write', path, upload, offset, final },
        path,
        runner === undefined ? {} : { runner },
        data,
      );
      runner = answer.runner;
      offset += data.length;
      return this.#meta(answer, 'write');
    };
    let done: z.infer<(typeof WorkspaceAnswers)['write']>;
    try {
      let pending = Buffer.alloc(0);
      let received = 0;
      for await (const piece of body) {
        received += piece.length;
        if (received > max) throw tooLarge(max);
        pending = pending.length === 0 ? Buffer.from(piece) : Buffer.concat([pending, piece]);
        while (pending.length >= chunk) {
          await send(pending.subarray(0, chunk), false);
          pending = pending.subarray(chunk);
        }
      }
      done = await send(pending, true);
    } catch (error) {
      // what was kept of it goes (the runner drops a stale one anyway)
      if (offset > 0)
        await this.#ask(ref, { op: 'abort', upload }, path, runner === undefined ? {} : { runner }).catch(
          () => undefined,
        );
      throw error;
    }
    if (!done.done || done.size !== offset)
      throw new ApiError(
        503,
        'unavailable',
        'The tool runner did not confirm the whole upload; send it again.',
        undefined,
        1,
      );
    const { size, sha256, created } = done;
    const commit = await appendWithRetry(this.log, ref, async (tail) => {
      if (tail.lastSeq === 0) throw ApiError.notFound(ref.conversation);
      return withPositionalIds(
        [
          draftEvent({ ...ref, source: 'user' }, 'workspace_file', {
            path,
            action: created ? 'created' : 'replaced',
            size,
            sha256,
          }),
        ],
        tail.lastSeq + 1,
      );
    });
    return { path, size, sha256, created, seq: commit!.lastSeq };
  }

  async gitStatus(ref: ConversationRef, path: string): Promise<GitStatus> {
    await this.#exists(ref);
    const answer = await this.#ask(ref, { op: 'git_status', path }, path, { timeoutMs: GIT_TIMEOUT_MS });
    const { repository_root, truncated } = this.#meta(answer, 'git_status');
    return GitStatus.parse({
      path,
      repository_root,
      ...parsePorcelainV2(Buffer.from(answer.data).toString('utf8'), repository_root, truncated),
    });
  }

  async gitDiff(ref: ConversationRef, path: string): Promise<GitDiff> {
    await this.#exists(ref);
    const answer = await this.#ask(ref, { op: 'git_diff', path }, path, { timeoutMs: GIT_TIMEOUT_MS });
    const { repository_root, base, truncated } = this.#meta(answer, 'git_diff');
    return GitDiff.parse({ path, repository_root, base, diff: Buffer.from(answer.data).toString('utf8'), truncated });
  }

  /** Nothing is asked of a runner for a conversation that does not exist (for this tenant): it would claim a workspace for it. */
  async #exists(ref: ConversationRef): Promise<void> {
    if ((await this.log.tail(ref)).lastSeq === 0) throw ApiError.notFound(ref.conversation);
  }

  async #ask(
    ref: ConversationRef,
    op: WorkspaceOp,
    path: string,
    options: { runner?: string; timeoutMs?: number } = {},
    data?: Uint8Array,
  ): Promise<WorkspaceAnswer> {
    if (!this.runners)
      throw new ApiError(
        503,
        'unavailable',
        'This gateway has no access to the tool runners, so it cannot reach workspaces.',
      );
    try {
      return await askWorkspace(this.nc, this.runners, ref, op, data, options);
    } catch (error) {
      if (error instanceof WorkspaceRequestError) throw this.#apiError(error, ref, op, path);
      throw error;
    }
  }

  /** A success's fields as the operation defines them; anything else is the runner's fault, not the client's. */
  #meta<K extends keyof typeof WorkspaceAnswers>(
    answer: WorkspaceAnswer,
    op: K,
  ): z.infer<(typeof WorkspaceAnswers)[K]> {
    const parsed = WorkspaceAnswers[op].safeParse(answer.meta);
    if (!parsed.success) throw this.#malformed(op, parsed.error);
    return parsed.data as z.infer<(typeof WorkspaceAnswers)[K]>;
  }

  #json<T>(answer: WorkspaceAnswer, schema: z.ZodType<T>): T {
    let value: unknown;
    try {
      value = JSON.parse(Buffer.from(answer.data).toString('utf8'));
    } catch (error) {
      throw this.#malformed('list', error);
    }
    const parsed = schema.safeParse(value);
    if (!parsed.success) throw this.#malformed('list', parsed.error);
    return parsed.data;
  }

  #malformed(op: string, cause: unknown): ApiError {
    this.logger.error(
      { err: cause, op },
      'a tool runner answered a workspace request with something this gateway cannot read',
    );
    return new ApiError(
      503,
      'unavailable',
      'The tool runner answered with something this gateway cannot read; retry.',
      undefined,
      1,
    );
  }

  #apiError(error: WorkspaceRequestError, ref: ConversationRef, op: WorkspaceOp, path: string): ApiError {
    const shown = JSON.stringify(path === '' ? '/' : path);
    switch (error.code) {
      case 'not_found':
        return new ApiError(404, 'file_not_found', `There is nothing at ${shown} in the workspace.`);
      case 'outside_workspace':
        return new ApiError(
          403,
          'path_outside_workspace',
          `${shown} leads outside the workspace (a symbolic link on it points out of it); only what is inside the workspace can be read or written.`,
        );
      case 'not_a_directory':
        return new ApiError(409, 'not_a_directory', `${shown} is not a folder (or a part of the path is a file).`);
      case 'is_a_directory':
        return new ApiError(
          409,
          'is_a_directory',
          op.op === 'write'
            ? `${shown} is a folder: a file cannot take its place.`
            : `${shown} is a folder: list it instead.`,
        );
      case 'not_a_regular_file':
        return new ApiError(
          409,
          'not_a_regular_file',
          `${shown} is not a regular file (a FIFO, a socket or a device).`,
        );
      case 'too_large':
        return new ApiError(413, 'file_too_large', error.message);
      case 'file_changed':
        return new ApiError(409, 'file_changed', error.message);
      case 'secret_in_file':
        return new ApiError(403, 'secret_in_file', error.message);
      case 'quota_exceeded':
        return new ApiError(413, 'workspace_quota_exceeded', error.message);
      case 'not_a_git_repository':
        return new ApiError(
          409,
          'not_a_git_repository',
          `${shown} is not in a git repository (run git init in it, or ask the agent to).`,
        );
      case 'git_failed':
        return new ApiError(409, 'git_failed', error.message);
      case 'invalid_request':
        this.logger.error({ err: error, op: op.op }, 'a tool runner refused a workspace request as invalid');
        return new ApiError(500, 'internal', 'Internal error; it has been logged.');
      default:
        // moved too often, no runner, a timeout, a runner's own failure (its message may name its paths: logged, not shown)
        this.logger.warn(
          { err: error, code: error.code, tenant: ref.tenant, conversation: ref.conversation, op: op.op },
          'a workspace request could not be answered',
        );
        return new ApiError(
          503,
          'unavailable',
          error.code === 'no_runner'
            ? 'No tool runner is running to reach the workspace; retry when one is.'
            : error.code === 'upload_lost'
              ? 'The upload was lost on the tool runner; send it again.'
              : 'The tool runner that owns the workspace could not answer; retry.',
          undefined,
          1,
        );
    }
  }
}

function tooLarge(max: number): ApiError {
  return new ApiError(
    413,
    'file_too_large',
    `A file may be at most ${max} bytes here (FLOTILLA_GATEWAY_MAX_FILE_BYTES).`,
  );
}

/** A runner's entry of the folder at `folder`, as the API shows it. */
function fileEntry(folder: string, entry: ListedEntry): FileEntry {
  return {
    name: entry.name,
    path: folder === '' ? entry.name : `${folder.replace(/\/+$/, '')}/${entry.name}`,
    type: entry.type,
    size: entry.size,
    modified_at: new Date(Math.abs(entry.modified_ms) <= 8.64e15 ? entry.modified_ms : 0).toISOString(),
    ...(entry.link_target === undefined ? {} : { link_target: entry.link_target }),
  };
}
