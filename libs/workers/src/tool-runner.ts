import { whileUnavailable } from '@flotilla/bus';
import type { ConversationRef } from '@flotilla/log';
import { RunnerSubjects, type CommitHandler } from '@flotilla/runtime';
import type { Subscription } from '@nats-io/transport-node';
import { BatchExecution } from './batch-execution.js';
import { createDeliveryHandler, executeForwarded } from './delivery-handling.js';
import { answerRequests, parseForward, parseRef } from './runner-messages.js';
import { createToolRunnerContext, type ToolRunnerContext } from './tool-runner-context.js';
import type { ToolRunnerDependencies } from './tool-runner-dependencies.js';
import { deleteWorkspace } from './workspace-deletion.js';
import { WorkspaceRequests } from './workspace-requests.js';

/**
 * A tool runner: owns conversations' workspaces (ownership in KV, heartbeat), runs each action
 * at most once (execution_started is appended before anything runs), and appends one commit of
 * observations per batch. Wake-ups for a workspace owned by another live runner are forwarded
 * to it; a dead owner's workspace is taken over.
 */
export class ToolRunner {
  readonly #deps: ToolRunnerDependencies;
  /** What the runner's duties share: ownerships, what each conversation's log says is in force, open workspaces, MCP servers. */
  readonly #context: ToolRunnerContext;
  /** The batches this process runs, one at a time per conversation. */
  readonly #batches: BatchExecution;
  /** The gateway's requests about workspaces this runner owns (files, git). */
  readonly #requests: WorkspaceRequests;
  #heartbeat: NodeJS.Timeout | undefined;
  readonly #subscriptions: Subscription[] = [];

  constructor(deps: ToolRunnerDependencies) {
    this.#deps = deps;
    this.#context = createToolRunnerContext(deps);
    this.#batches = new BatchExecution(this.#context);
    this.#requests = new WorkspaceRequests(this.#context);
  }

  get wakeSubject(): string {
    return RunnerSubjects.wake(this.#deps.runnerId);
  }

  async start(heartbeatMs = Math.max(250, Math.floor(this.#deps.runners.livenessMs / 4))): Promise<void> {
    await this.#context.workspaces.makeRoot();
    const { ownership } = this.#context;
    // the first heartbeat may meet a bucket whose leader is still being elected (a cluster starting)
    await whileUnavailable(() => ownership.beat(), {
      onRetry: (error, attempt) => this.#deps.logger.warn({ err: error, attempt }, 'first heartbeat failed; retrying'),
    });
    this.#heartbeat = setInterval(() => {
      ownership.beat().catch((error: unknown) => this.#deps.logger.warn({ err: error }, 'heartbeat failed'));
    }, heartbeatMs);
    const { nc, runnerId } = this.#deps;
    this.#subscriptions.push(
      nc.subscribe(this.wakeSubject, {
        callback: answerRequests(parseForward, (forwarded) =>
          executeForwarded(this.#context, this.#batches, forwarded),
        ),
      }),
      nc.subscribe(RunnerSubjects.delete(runnerId), {
        callback: answerRequests(parseRef, (ref) => this.deleteWorkspace(ref)),
      }),
      nc.subscribe(RunnerSubjects.deleteAny, {
        queue: RunnerSubjects.deleteQueue,
        callback: answerRequests(parseRef, (ref) => this.deleteWorkspace(ref)),
      }),
      nc.subscribe(RunnerSubjects.workspace(runnerId), {
        callback: (_error, message) => this.#requests.answer(message),
      }),
      nc.subscribe(RunnerSubjects.workspaceAny, {
        queue: RunnerSubjects.deleteQueue,
        callback: (_error, message) => this.#requests.answer(message),
      }),
    );
  }

  /**
   * The conversation was deleted: its shell and sandbox stop, its workspace and ownership entry
   * are removed. A batch running for it finishes first (it cannot be appended to a purged log).
   */
  async deleteWorkspace(ref: ConversationRef): Promise<void> {
    await deleteWorkspace(this.#context, this.#batches, ref);
  }

  async stop(): Promise<void> {
    clearInterval(this.#heartbeat);
    for (const subscription of this.#subscriptions) subscription.unsubscribe();
    await this.#batches.allSettled();
    await this.#context.mcp.closeAll();
    await this.#deps.runners.retire(this.#deps.runnerId);
  }

  handler(): CommitHandler {
    return createDeliveryHandler(this.#context, this.#batches);
  }
}
