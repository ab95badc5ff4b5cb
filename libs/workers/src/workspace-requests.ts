import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { ConversationRef } from '@flotilla/log';
import { answerWorkspace, parseWorkspaceRequest } from '@flotilla/runtime';
import type { Msg } from '@nats-io/transport-node';
import type { ToolRunnerContext } from './tool-runner-context.js';
import { conversationKey as key } from './tool-runner-dependencies.js';
import { WorkspaceFiles, type OpenedWorkspace, type WorkspaceAccess } from './workspace-files.js';

/**
 * The gateway's requests about workspaces (files, git), as the tool runner takes them: answered
 * where it owns the workspace (claimed when no live runner does), in the same workspace, sandbox
 * and secrets its batches have; else the gateway is told to ask the owner.
 */
export class WorkspaceRequests {
  readonly #context: ToolRunnerContext;
  /** The gateway's requests about workspaces this runner owns (files, git). */
  readonly #files: WorkspaceFiles;

  constructor(context: ToolRunnerContext) {
    this.#context = context;
    const { deps } = context;
    const access: WorkspaceAccess = {
      use: (ref, task) => this.#useWorkspace(ref, task),
      privateDir: (ref) => join(deps.privateRoot, ref.tenant, ref.conversation),
    };
    this.#files = new WorkspaceFiles(access, {
      nc: deps.nc,
      logger: deps.logger,
      ...(deps.mask ? { mask: deps.mask } : {}),
      ...(deps.scanSecrets ? { scan: deps.scanSecrets } : {}),
      ...(deps.workspaceQuotaBytes === undefined ? {} : { workspaceQuotaBytes: deps.workspaceQuotaBytes }),
    });
  }

  /** A workspace request of the gateway's: answered when this runner owns the workspace (claimed when no live runner does), else `moved`. */
  answer(message: Msg): void {
    const { runnerId, logger } = this.#context.deps;
    const request = parseWorkspaceRequest(message);
    if (typeof request === 'string')
      return answerWorkspace(message, runnerId, { code: 'invalid_request', message: request });
    const { ref } = request;
    const answered = async (): Promise<void> => {
      const owned = await this.#ownForRequest(ref);
      // the owner, when this runner knows it, is asked next (a sub-agent's shared workspace is owned as its parent's)
      if (owned !== true)
        return answerWorkspace(message, runnerId, {
          code: 'moved',
          message: 'another tool runner owns this workspace',
          ...(owned.owner ? { owner: owned.owner } : {}),
        });
      answerWorkspace(message, runnerId, await this.#files.handle(request));
    };
    answered().catch((error: unknown) => {
      logger.warn(
        { err: error, conversation: ref.conversation, tenant: ref.tenant, op: request.op.op },
        'a workspace request failed',
      );
      answerWorkspace(message, runnerId, {
        code: 'unavailable',
        message: `The tool runner could not do it: ${(error as Error).message}`,
      });
    });
  }

  /**
   * Whether this runner owns the workspace for a request, claiming it when no live runner does
   * (the conversation has run no tool yet, or its owner died): a user may upload before the first
   * run. A workspace taken from a dead owner is noted, for the next batch to tell the agent. When
   * another live runner owns it, says which (when known: a lost claim race says nothing).
   */
  async #ownForRequest(ref: ConversationRef): Promise<true | { readonly owner: string | undefined }> {
    const { deps, inForce, ownership, notes } = this.#context;
    // a sub-agent's shared workspace is its parent's: owned, and held, as the parent's
    const home = inForce.home(ref, (await deps.cache.load(ref)).events);
    if (ownership.ownsRecently(home)) return true;
    const { runners, runnerId } = deps;
    const asked = Date.now();
    const owner = await runners.owner(home);
    if (owner?.runner === runnerId) {
      ownership.confirmOwned(home, asked);
      return true;
    }
    if (owner?.runner && (await runners.isAlive(owner.runner))) return { owner: owner.runner };
    const existed = await stat(join(deps.workspaceRoot, home.tenant, home.conversation)).then(
      () => true,
      () => false,
    );
    if (!(await runners.claim(home, runnerId, owner))) return { owner: undefined };
    ownership.confirmOwned(home, asked);
    if (owner !== undefined && owner.runner !== '') {
      notes.tookOver(ref, existed);
      deps.logger.info(
        { conversation: ref.conversation, tenant: ref.tenant, previousOwner: owner.runner },
        'took over the workspace for a workspace request',
      );
    }
    return true;
  }

  /** The conversation's workspace, sandbox and secrets as its batches have them (the same sandbox environment: the spec's model key left out). */
  async #useWorkspace<T>(ref: ConversationRef, task: (opened: OpenedWorkspace) => Promise<T>): Promise<T> {
    const { deps, inForce, workspaces, notes } = this.#context;
    const conversation = await deps.cache.load(ref);
    const { root } = await workspaces.directory(ref, inForce.home(ref, conversation.events), false);
    const revealed = await inForce.secrets(ref, inForce.inForce(conversation.events).modelKey);
    const privateDir = join(deps.privateRoot, ref.tenant, ref.conversation);
    return await deps.sandboxes.use(
      { id: key(ref), workspace: root, privateDir, env: revealed.sandbox },
      async ({ sandbox, restarted }) => {
        if (restarted) notes.restarted(ref, restarted);
        // a request may write (an upload): the workspace's filesystem, where it gets one, is made first
        await sandbox.prepareWorkspace?.();
        const workspace = await workspaces.open(ref, root, sandbox);
        return await task({ workspace, sandbox, secrets: revealed.all });
      },
    );
  }
}
