import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { ConversationRef } from '@flotilla/log';
import type { BatchExecution } from './batch-execution.js';
import type { ToolRunnerContext } from './tool-runner-context.js';
import { conversationKey as key } from './tool-runner-dependencies.js';

/**
 * The conversation was deleted: its shell and sandbox stop, its workspace and ownership entry
 * are removed. A batch running for it finishes first (it cannot be appended to a purged log).
 */
export async function deleteWorkspace(
  { deps, inForce, mcp, notes, workspaces, ownership }: ToolRunnerContext,
  batches: BatchExecution,
  ref: ConversationRef,
): Promise<void> {
  // a sub-agent's shared workspace is its parent's: only what is its own goes (asked before its log is purged)
  const home = inForce.home(ref, (await deps.cache.load(ref)).events);
  await batches.settled(ref);
  await deps.tools.closeConversation(key(ref));
  await mcp.close(key(ref));
  await deps.sandboxes.remove(key(ref));
  notes.forget(ref);
  workspaces.forget(ref);
  ownership.forget(ref);
  deps.cache.forget(ref);
  await rm(join(deps.privateRoot, ref.tenant, ref.conversation), { recursive: true, force: true });
  if (home.conversation !== ref.conversation) return;
  const root = join(deps.workspaceRoot, ref.tenant, ref.conversation);
  // a workspace of its own filesystem is unmounted first (its image goes too), or rm would stop at its mount point
  await deps.sandboxes.releaseWorkspace(root);
  await rm(root, { recursive: true, force: true });
  await deps.runners.release(ref);
}
