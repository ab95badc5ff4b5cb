import { requestAnswer, RunnerSubjects } from '@flotilla/bus';
import { WorkspacePath } from '@flotilla/events';
import { assertConversationRef, type ConversationRef } from '@flotilla/log';
import { headers, NoRespondersError, TimeoutError, type Msg, type NatsConnection } from '@nats-io/transport-node';
import { z } from 'zod';
import { RunnerHeader, type RunnerRegistry } from './runner-registry.js';

/**
 * The gateway's requests about a conversation's workspace (its files, its git status and diff),
 * answered by the tool runner that owns the workspace: core NATS request/reply, the answer in the
 * gateway's answers branch (requestAnswer). The request names the conversation in the runner
 * headers and the operation as JSON in `Flotilla-Workspace-Op`; a write carries its bytes in the
 * body. The answer's `Flotilla-Workspace-Answer` header says how it went (JSON), and its body
 * holds what was asked for: a file's bytes, a listing's or a status's JSON, a diff's text. Each
 * message stays under the server's max_payload (workspaceChunkBytes), so a file moves in chunks.
 */
export const WorkspaceHeader = { Op: 'Flotilla-Workspace-Op', Answer: 'Flotilla-Workspace-Answer' } as const;

/** A folder of the workspace: `""` is its root. */
const FolderPath = z.union([z.literal(''), WorkspacePath]);
const Offset = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
/** Names one upload's chunks (the gateway makes it): where they are kept until the last one. */
export const UploadId = z.string().regex(/^[0-9A-Za-z]{16,40}$/, 'must be 16-40 letters and digits');

/** One version of a file: a download whose file changes between its chunks is stopped. */
export const FileVersion = z.strictObject({
  ino: z.number().int().nonnegative(),
  size: Offset,
  mtime_ms: z.number(),
  ctime_ms: z.number(),
});
export type FileVersion = z.infer<typeof FileVersion>;

export const WorkspaceOp = z.discriminatedUnion('op', [
  z.strictObject({ op: z.literal('list'), path: FolderPath }),
  /** Bytes of a file from `offset`; the first read (no `version`) also checks the file and says its version. */
  z.strictObject({
    op: z.literal('read'),
    path: WorkspacePath,
    offset: Offset,
    length: z.number().int().positive(),
    max_size: Offset,
    version: FileVersion.optional(),
  }),
  /** The body's bytes at `offset` of an upload; `final` puts the whole upload in place of the file at `path`. */
  z.strictObject({ op: z.literal('write'), path: WorkspacePath, upload: UploadId, offset: Offset, final: z.boolean() }),
  z.strictObject({ op: z.literal('abort'), upload: UploadId }),
  z.strictObject({ op: z.literal('git_status'), path: FolderPath }),
  z.strictObject({ op: z.literal('git_diff'), path: FolderPath }),
]);
export type WorkspaceOp = z.infer<typeof WorkspaceOp>;

/** One entry of a `list` answer's body (a JSON array of them); the gateway makes the API's FileEntry of it. */
export const ListedEntry = z.strictObject({
  name: z.string().min(1).max(1_024),
  type: z.enum(['file', 'directory', 'symlink', 'other']),
  size: z.number().int().nonnegative().nullable(),
  modified_ms: z.number(),
  link_target: z.string().max(8_192).optional(),
});
export type ListedEntry = z.infer<typeof ListedEntry>;

/** The fields of each operation's success (its answer header); a `read`'s body is the bytes, a git answer's the text git printed. */
export const WorkspaceAnswers = {
  list: z.strictObject({ truncated: z.boolean() }),
  read: z.strictObject({ version: FileVersion }),
  write: z.union([
    z.strictObject({ done: z.literal(false), received: Offset }),
    z.strictObject({
      done: z.literal(true),
      size: Offset,
      sha256: z.string().regex(/^[0-9a-f]{64}$/),
      created: z.boolean(),
    }),
  ]),
  abort: z.strictObject({}),
  git_status: z.strictObject({ repository_root: z.string(), truncated: z.boolean() }),
  git_diff: z.strictObject({
    repository_root: z.string(),
    base: z.enum(['HEAD', 'empty_tree']),
    truncated: z.boolean(),
  }),
} as const satisfies Record<WorkspaceOp['op'], z.ZodType>;

/** Why a workspace request was not done. `moved`: this runner does not own the workspace (ask the owner again). */
export const WorkspaceFailureCode = z.enum([
  'moved',
  'invalid_request',
  'not_found',
  'outside_workspace',
  'not_a_directory',
  'is_a_directory',
  'not_a_regular_file',
  'too_large',
  'file_changed',
  'secret_in_file',
  'quota_exceeded',
  'upload_lost',
  'not_a_git_repository',
  'git_failed',
  'unavailable',
]);
export type WorkspaceFailureCode = z.infer<typeof WorkspaceFailureCode>;

/** A failure; `moved` may name the live runner that owns the workspace (where it is not where the gateway looked: a sub-agent's shared workspace is its parent's). */
const Failure = z.strictObject({
  ok: z.literal(false),
  code: WorkspaceFailureCode,
  message: z.string().max(8_000),
  runner: z.string().optional(),
  owner: z.string().min(1).max(256).optional(),
});
/** A success's own fields (a read's version, a write's progress, a diff's place) are the operation's; the gateway checks them as it uses them. */
const Success = z.looseObject({ ok: z.literal(true), runner: z.string() });
const AnswerMeta = z.discriminatedUnion('ok', [Success, Failure]);

/** The largest chunk of a file a request or an answer carries. */
export const MAX_WORKSPACE_CHUNK_BYTES = 512 * 1024;
/** Room kept in each message for headers. */
const HEADROOM_BYTES = 64 * 1024;

/** The most a workspace message's body may hold on this connection's server (its max_payload less room for headers). */
export function workspaceBodyBytes(nc: NatsConnection): number {
  return Math.max(16 * 1024, (nc.info?.max_payload ?? 1024 * 1024) - HEADROOM_BYTES);
}

/** The size of the chunks files move in: MAX_WORKSPACE_CHUNK_BYTES, or less where the server's max_payload is smaller. */
export function workspaceChunkBytes(nc: NatsConnection): number {
  return Math.min(MAX_WORKSPACE_CHUNK_BYTES, workspaceBodyBytes(nc));
}

/** A workspace request that was refused or could not be made. `code` is the runner's, or `no_runner` / `timeout` from here. */
export class WorkspaceRequestError extends Error {
  readonly code: WorkspaceFailureCode | 'no_runner' | 'timeout';
  readonly isRetryable: boolean;

  constructor(code: WorkspaceRequestError['code'], message: string, options: ErrorOptions = {}) {
    super(message, options);
    this.name = 'WorkspaceRequestError';
    this.code = code;
    this.isRetryable =
      code === 'moved' ||
      code === 'no_runner' ||
      code === 'timeout' ||
      code === 'unavailable' ||
      code === 'upload_lost';
  }
}

export type WorkspaceAnswer = {
  /** The success's fields (besides `ok`). */
  readonly meta: Readonly<Record<string, unknown>>;
  readonly data: Uint8Array;
  /** The runner that answered: the next chunk of a transfer goes to it. */
  readonly runner: string;
};

export type AskOptions = {
  readonly timeoutMs?: number;
  /** The runner that answered the previous request of this transfer. */
  readonly runner?: string;
};

const ATTEMPTS = 4;

/**
 * Asks the tool runner that owns the conversation's workspace (any runner, which then claims it,
 * when no live runner owns it). A runner that turns out not to own it answers `moved`, and the
 * owner is looked up again. Throws a WorkspaceRequestError.
 */
export async function askWorkspace(
  nc: NatsConnection,
  runners: RunnerRegistry,
  ref: ConversationRef,
  op: WorkspaceOp,
  body?: Uint8Array,
  options: AskOptions = {},
): Promise<WorkspaceAnswer> {
  const request = headers();
  request.set(RunnerHeader.Tenant, ref.tenant);
  request.set(RunnerHeader.Conversation, ref.conversation);
  request.set(WorkspaceHeader.Op, headerJson(op));
  let hint = options.runner;
  let anyRunner = false;
  for (let attempt = 1; ; attempt += 1) {
    const subject = hint
      ? RunnerSubjects.workspace(hint)
      : anyRunner
        ? RunnerSubjects.workspaceAny
        : await ownerSubject(runners, ref);
    let reply: Msg;
    try {
      reply = await requestAnswer(nc, subject, body, { headers: request, timeout: options.timeoutMs ?? 30_000 });
    } catch (error) {
      if (isNoResponders(error)) {
        // the runner asked is gone: any runner takes the workspace over; none at all is the end
        if (subject !== RunnerSubjects.workspaceAny && attempt < ATTEMPTS) {
          hint = undefined;
          anyRunner = true;
          continue;
        }
        throw new WorkspaceRequestError(
          'no_runner',
          'No tool runner is running to answer for the workspace; start one (or wait for it) and retry.',
          { cause: error },
        );
      }
      if (isTimeout(error))
        throw new WorkspaceRequestError(
          'timeout',
          'The tool runner that owns the workspace did not answer in time; retry.',
          { cause: error },
        );
      throw error;
    }
    const answer = readAnswer(reply);
    if (answer.ok) return { meta: answer.meta, data: reply.data, runner: answer.runner };
    if (answer.code === 'moved' && attempt < ATTEMPTS) {
      hint = answer.owner;
      anyRunner = false;
      continue;
    }
    throw new WorkspaceRequestError(answer.code, answer.message);
  }
}

/** The subject of the runner that owns the workspace while it lives, else the one any runner takes. */
async function ownerSubject(runners: RunnerRegistry, ref: ConversationRef): Promise<string> {
  const owner = await runners.owner(ref);
  return owner?.runner && (await runners.isAlive(owner.runner))
    ? RunnerSubjects.workspace(owner.runner)
    : RunnerSubjects.workspaceAny;
}

function readAnswer(
  reply: Msg,
):
  | { ok: true; meta: Record<string, unknown>; runner: string }
  | { ok: false; code: WorkspaceFailureCode; message: string; owner?: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(reply.headers?.get(WorkspaceHeader.Answer) ?? '');
  } catch {
    throw new WorkspaceRequestError(
      'unavailable',
      'A tool runner answered a workspace request without a readable answer header.',
    );
  }
  const answer = AnswerMeta.safeParse(parsed);
  if (!answer.success)
    throw new WorkspaceRequestError(
      'unavailable',
      `A tool runner answered a workspace request with an answer this gateway cannot read: ${answer.error.issues[0]?.message ?? 'invalid'}.`,
    );
  if (!answer.data.ok)
    return {
      ok: false,
      code: answer.data.code,
      message: answer.data.message,
      ...(answer.data.owner ? { owner: answer.data.owner } : {}),
    };
  const { ok: _ok, runner, ...meta } = answer.data;
  return { ok: true, meta, runner };
}

function isNoResponders(error: unknown): boolean {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 4; cause = cause.cause, depth += 1)
    if (cause instanceof NoRespondersError) return true;
  return false;
}

function isTimeout(error: unknown): boolean {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 4; cause = cause.cause, depth += 1)
    if (cause instanceof TimeoutError) return true;
  return false;
}

/** A workspace request as a runner receives it: the conversation, the operation and the bytes it carries. */
export type WorkspaceRequest = { readonly ref: ConversationRef; readonly op: WorkspaceOp; readonly data: Uint8Array };

/** The request a message holds, or why it holds none. */
export function parseWorkspaceRequest(message: Msg): WorkspaceRequest | string {
  const ref = {
    tenant: message.headers?.get(RunnerHeader.Tenant) ?? '',
    conversation: message.headers?.get(RunnerHeader.Conversation) ?? '',
  };
  try {
    assertConversationRef(ref);
  } catch (error) {
    return (error as Error).message;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(message.headers?.get(WorkspaceHeader.Op) ?? '');
  } catch {
    return `${WorkspaceHeader.Op} must hold the operation as JSON`;
  }
  const op = WorkspaceOp.safeParse(raw);
  if (!op.success)
    return `${WorkspaceHeader.Op}: ${op.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ')}`;
  return { ref, op: op.data, data: message.data };
}

/** Answers a workspace request: a success with its fields and bytes, or a failure. */
export function answerWorkspace(
  message: Msg,
  runner: string,
  answer:
    | { readonly meta?: Readonly<Record<string, unknown>>; readonly data?: Uint8Array }
    | { readonly code: WorkspaceFailureCode; readonly message: string; readonly owner?: string },
): void {
  const reply = headers();
  if ('code' in answer) {
    reply.set(
      WorkspaceHeader.Answer,
      headerJson({
        ok: false,
        code: answer.code,
        message: answer.message.slice(0, 8_000),
        runner,
        ...(answer.owner ? { owner: answer.owner } : {}),
      }),
    );
    message.respond(undefined, { headers: reply });
    return;
  }
  reply.set(WorkspaceHeader.Answer, headerJson({ ...answer.meta, ok: true, runner }));
  message.respond(answer.data, { headers: reply });
}

/** JSON for a header value: one line of ASCII (a path may hold any character; JSON escapes the line breaks, this the rest). */
function headerJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[\u007f-\uffff]/g,
    (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
