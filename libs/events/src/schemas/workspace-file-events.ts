import { z } from 'zod';
import { envelope, versionField } from './envelope.js';
import { WorkspacePath } from './workspace-context-events.js';

/**
 * A user put a file in the conversation's workspace (an upload through the API): where, whether it
 * was new or replaced one, its size and SHA-256. Not its bytes: they are in the workspace. Written
 * by the gateway once the tool runner that owns the workspace has put the whole file in place, so
 * the log says who changed the workspace besides the agent's own actions. The model does not see
 * it (the view holds only what the agent and the user said and did in the conversation); a user
 * who wants the agent to use the file says so. Introduced in protocol version 4.
 */
export const WorkspaceFileEvent = z.strictObject({
  ...envelope,
  v: versionField('workspace_file', 4),
  type: z.literal('workspace_file'),
  /** Relative to the workspace root, as the files routes take it. */
  path: WorkspacePath,
  action: z.enum(['created', 'replaced']),
  size: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  sha256: z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex digits'),
});
export type WorkspaceFileEvent = z.infer<typeof WorkspaceFileEvent>;
