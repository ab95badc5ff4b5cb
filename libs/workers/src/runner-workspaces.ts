import { chmod, mkdir, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { ConversationRef } from '@flotilla/log';
import { setRecent } from '@flotilla/runtime';
import type { Sandbox } from '@flotilla/sandbox';
import { openWorkspace, type Workspace } from '@flotilla/tools';
import { conversationKey as key, type ToolRunnerDependencies } from './tool-runner-dependencies.js';

/** The workspaces' folder and each tenant's: traversable by the sandbox user, listable by no other user. */
const WORKSPACE_PARENTS_MODE = 0o711;
/** A workspace: its owner's alone (the sandbox user's, once its sandbox opens). */
const WORKSPACE_MODE = 0o700;
/** Workspaces kept open (a resolved root and a few paths each): well above the live conversations one runner serves. */
const MAX_OPEN_WORKSPACES = 100_000;

/**
 * The workspaces of the conversations this runner serves, on its host: their directories, made
 * with the modes that keep them their owners' alone, and the workspaces opened on them, kept open
 * for the next batch.
 */
export class RunnerWorkspaces {
  readonly #deps: Pick<ToolRunnerDependencies, 'workspaceRoot'>;
  /** Opened workspaces, most recently used last. */
  readonly #workspaces = new Map<string, Workspace>();

  constructor(deps: Pick<ToolRunnerDependencies, 'workspaceRoot'>) {
    this.#deps = deps;
  }

  /** Makes the workspaces' folder, or closes one an older version made. */
  async makeRoot(): Promise<void> {
    // traversed by the sandbox user on the way to its workspace, listed by nobody else (an older version made it 0755)
    await mkdir(this.#deps.workspaceRoot, { recursive: true, mode: WORKSPACE_PARENTS_MODE });
    await chmod(this.#deps.workspaceRoot, WORKSPACE_PARENTS_MODE);
  }

  /** The conversation's workspace as opened last, if it is still open. */
  get(ref: ConversationRef): Workspace | undefined {
    return this.#workspaces.get(key(ref));
  }

  /** The conversation's workspace as its tools have it in `sandbox`, opened on `root` unless it is open already. */
  async open(ref: ConversationRef, root: string, sandbox: Sandbox): Promise<Workspace> {
    let workspace = this.#workspaces.get(key(ref));
    if (!workspace) {
      const readOnly = { root: sandbox.privateDir, shownRoot: sandbox.toInside(sandbox.privateDir) };
      workspace = await openWorkspace(root, { shownRoot: sandbox.workspacePath, owner: sandbox.owner, readOnly });
    }
    setRecent(this.#workspaces, key(ref), workspace, MAX_OPEN_WORKSPACES);
    return workspace;
  }

  /** Forgets the conversation's opened workspace (it was deleted). */
  forget(ref: ConversationRef): void {
    this.#workspaces.delete(key(ref));
  }

  /** The conversation's workspace directory on this host (`home`'s, ConversationInForce.home), created when missing; `existed` only when asked. */
  async directory(
    ref: ConversationRef,
    home: ConversationRef,
    checkExisted: boolean,
  ): Promise<{ root: string; existed: boolean }> {
    const root = join(this.#deps.workspaceRoot, home.tenant, home.conversation);
    const existed = checkExisted
      ? await stat(root).then(
          () => true,
          () => false,
        )
      : true;
    if (checkExisted || !this.#workspaces.has(key(ref))) {
      // the workspaces and each tenant's folder may be traversed (the sandbox user must reach its
      // workspace) but not listed; a workspace is its owner's alone (docs/security.md)
      await mkdir(dirname(root), { recursive: true, mode: WORKSPACE_PARENTS_MODE });
      await mkdir(root, { recursive: true, mode: WORKSPACE_MODE });
      // a tenant's folder an older version made (0755) is closed as its next workspace is made
      if (checkExisted && !existed) await chmod(dirname(root), WORKSPACE_PARENTS_MODE);
    }
    return { root, existed };
  }
}
