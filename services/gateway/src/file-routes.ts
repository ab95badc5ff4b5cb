import {
  API_PREFIX,
  FileListing,
  FileQuery,
  GitDiff,
  GitQuery,
  GitStatus,
  ListFilesQuery,
  UploadedFile,
} from '@flotilla/api';
import { ConversationId } from '@flotilla/events';
import { z } from 'zod';
import { ApiError } from './api-error.js';
import { route, type RawBody, type RouteSpec } from './route-table.js';
import type { WorkspaceService } from './workspace-service.js';

const IdParams = z.strictObject({ id: ConversationId });
const FILE: RawBody = {
  contentType: 'application/octet-stream',
  description: "The file's bytes, as they are in the workspace",
};
const UPLOAD: RawBody = {
  contentType: 'application/octet-stream',
  description:
    "The file's bytes (up to the gateway's FLOTILLA_GATEWAY_MAX_FILE_BYTES, 64 MiB by default: 413 file_too_large past it)",
};

const p = (path: string): string => `${API_PREFIX}${path}`;

/**
 * A conversation's workspace: its files (list, download, upload) and the git status and diff of a
 * repository in it, answered by the tool runner that owns the workspace, confined to it. Paths are
 * relative to the workspace root; `..` and absolute paths are refused (400), and so is a path that
 * a symbolic link leads out of the workspace (403 path_outside_workspace).
 */
export function fileRoutes(files: WorkspaceService): RouteSpec[] {
  const ref = (tenant: string, id: string) => ({ tenant, conversation: id });
  return [
    route({
      method: 'GET',
      url: p('/conversations/:id/files'),
      operationId: 'listFiles',
      summary:
        "One folder of the conversation's workspace (`path`, default its root), one level: its entries, folders first, at most 1,000",
      tag: 'files',
      access: 'tenant',
      params: IdParams,
      query: ListFilesQuery,
      responses: { 200: FileListing },
      errors: [403, 404, 409],
      handler: async ({ tenant, params, query }) => files.list(ref(tenant, params.id), query.path ?? ''),
    }),
    route({
      method: 'GET',
      url: p('/conversations/:id/files/content'),
      operationId: 'downloadFile',
      summary:
        'A file of the workspace, byte for byte (application/octet-stream); refused when it holds a secret’s value (403 secret_in_file)',
      tag: 'files',
      access: 'tenant',
      params: IdParams,
      query: FileQuery,
      responses: { 200: null },
      rawResponse: { status: 200, ...FILE },
      errors: [403, 404, 409, 413],
      handler: async ({ tenant, params, query, reply }) => {
        const download = await files.download(ref(tenant, params.id), query.path);
        // never rendered by a browser on the gateway's origin, whatever the file holds
        void reply
          .header('content-type', 'application/octet-stream')
          .header('content-length', String(download.size))
          .header('content-disposition', attachment(query.path))
          .header('x-content-type-options', 'nosniff')
          .header('content-security-policy', "default-src 'none'; sandbox")
          .header('cache-control', 'no-store');
        return download.body;
      },
    }),
    route({
      method: 'PUT',
      url: p('/conversations/:id/files/content'),
      operationId: 'uploadFile',
      summary:
        'Put a file in the workspace at `path` (the body is its bytes): made or replaced at once, its folders made; 201 new, 200 replaced; appends workspace_file',
      tag: 'files',
      access: 'tenant',
      params: IdParams,
      query: FileQuery,
      rawBody: UPLOAD,
      responses: { 200: UploadedFile, 201: UploadedFile },
      errors: [403, 404, 409, 413, 415],
      handler: async ({ tenant, params, query, request, reply }) => {
        const body = request.body ?? [];
        if (!isByteStream(body))
          throw new ApiError(
            415,
            'unsupported_media_type',
            "Send the file's bytes with content-type application/octet-stream.",
          );
        const declared = Number(request.headers['content-length']);
        const uploaded = await files.upload(
          ref(tenant, params.id),
          query.path,
          body,
          Number.isSafeInteger(declared) ? declared : undefined,
        );
        reply.code(uploaded.created ? 201 : 200);
        return uploaded;
      },
    }),
    route({
      method: 'GET',
      url: p('/conversations/:id/git/status'),
      operationId: 'getGitStatus',
      summary:
        'git status of the repository holding a folder of the workspace (`path`, default its root), its changes under that folder; 409 not_a_git_repository',
      tag: 'files',
      access: 'tenant',
      params: IdParams,
      query: GitQuery,
      responses: { 200: GitStatus },
      errors: [403, 404, 409],
      handler: async ({ tenant, params, query }) => files.gitStatus(ref(tenant, params.id), query.path ?? ''),
    }),
    route({
      method: 'GET',
      url: p('/conversations/:id/git/diff'),
      operationId: 'getGitDiff',
      summary:
        'git diff of that repository against HEAD (the empty tree before its first commit), untracked files as new, under the folder; secrets masked, cut at about 1 MiB',
      tag: 'files',
      access: 'tenant',
      params: IdParams,
      query: GitQuery,
      responses: { 200: GitDiff },
      errors: [403, 404, 409],
      handler: async ({ tenant, params, query }) => files.gitDiff(ref(tenant, params.id), query.path ?? ''),
    }),
  ];
}

/** The request body as the octet-stream parser hands it over: the unread stream (an empty body: nothing to read). */
function isByteStream(body: unknown): body is AsyncIterable<Uint8Array> {
  return Array.isArray(body) ? body.length === 0 : typeof (body as { pipe?: unknown } | null)?.pipe === 'function';
}

/** A download's Content-Disposition: the file's name, ASCII for old clients and UTF-8 (RFC 6266) for the rest. */
function attachment(path: string): string {
  const name = path.split('/').filter(Boolean).pop() ?? 'file';
  const ascii = name.replace(/[^A-Za-z0-9._-]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}
