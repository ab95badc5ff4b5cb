import { childConversationId, TASK_TOOL } from '@flotilla/agent';
import type { ConversationRef } from '@flotilla/log';
import { requestPurge, type DeletionNotice } from '@flotilla/runtime';
import type { ConversationSnapshot } from '@flotilla/state';
import { ApiError } from './api-error.js';
import type { ConversationCommands } from './conversation-commands.js';

/**
 * Conversations' removal, deleted by their user or expired past their retention: the sub-agents'
 * conversations they started first, then what the delete hooks hold of them, their log and their
 * snapshot, the deletion announced once the log is purged.
 */
export class ConversationDeletion {
  /** What else a conversation's deletion removes (its workspace, its secrets), before its log goes. */
  readonly #onDelete: ((ref: ConversationRef, workspace: ConversationRef) => Promise<void>)[] = [];
  readonly #onDeleted: ((notice: DeletionNotice) => Promise<void>)[] = [];

  constructor(
    readonly commands: ConversationCommands,
    /** Interrupts a running sub-agent's conversation before it goes (ConversationService.interrupt). */
    readonly interrupt: (ref: ConversationRef, reason: string) => Promise<unknown>,
  ) {}

  /** Also remove, when a conversation is deleted, what `hook` holds of it (called before the log is purged). */
  onDelete(hook: (ref: ConversationRef, workspace: ConversationRef) => Promise<void>): void {
    this.#onDelete.push(hook);
  }

  /**
   * Tell `hook` of each conversation deleted, once its log is purged and before its snapshot goes.
   * A failure fails the delete (503), but the log is gone by then: the conversation is not found
   * again, so no later delete tells of it (analytics.md, "Deleted conversations").
   */
  onDeleted(hook: (notice: DeletionNotice) => Promise<void>): void {
    this.#onDeleted.push(hook);
  }

  /** Remove the conversation's log, snapshot and what the delete hooks hold. A running conversation must be paused first. */
  async delete(ref: ConversationRef): Promise<void> {
    const snapshot = await this.commands.snapshot(ref);
    if (snapshot.status === 'running')
      throw new ApiError(409, 'conversation_running', 'The conversation is running: pause or interrupt it first.');
    await this.#remove(ref, snapshot, 'deleted');
  }

  /**
   * Removes the conversation as `delete` does if, read at its log's tail in its turn of commands,
   * `keptFor` says it has outlived its retention (seconds; undefined: it has not), after
   * `announce` resolves (the announcement stored before anything goes). False when it is gone
   * already or no longer expired (it moved meanwhile).
   */
  expire(
    ref: ConversationRef,
    keptFor: (snapshot: ConversationSnapshot) => number | undefined,
    announce: (snapshot: ConversationSnapshot, seconds: number) => Promise<void>,
  ): Promise<boolean> {
    return this.commands.inTurn(ref, async () => {
      const snapshot = await this.commands.snapshot(ref).catch((error: unknown) => {
        if (error instanceof ApiError && error.statusCode === 404) return undefined;
        throw error;
      });
      const seconds = snapshot && keptFor(snapshot);
      if (!snapshot || seconds === undefined) return false;
      await announce(snapshot, seconds);
      await this.#remove(ref, snapshot, 'expired');
      return true;
    });
  }

  /**
   * A conversation's removal, after the sub-agents' conversations it started (theirs first, each
   * interrupted when it runs: nobody waits for it any more): its queued run, what the delete hooks hold of it, its
   * log, its snapshot. A crash half-way leaves the parent, so deleting it again finishes the job.
   */
  async #remove(ref: ConversationRef, snapshot: ConversationSnapshot, reason: DeletionNotice['reason']): Promise<void> {
    const { children, workspace } = await this.#delegationsOf(ref, snapshot);
    for (const child of children) {
      let state = await this.commands.snapshot(child).catch((error: unknown) => {
        if (error instanceof ApiError && error.statusCode === 404) return undefined;
        throw error;
      });
      if (!state) continue;
      if (state.status === 'running') {
        await this.interrupt(child, 'its parent conversation is deleted');
        state = await this.commands.snapshot(child);
      }
      await this.#remove(child, state, reason);
    }
    // a run of it waiting for a slot would start a conversation that is no more
    await this.commands.admission.runQueue?.remove(ref);
    for (const hook of this.#onDelete) await hook(ref, workspace);
    const { upToStreamSeq } = await requestPurge(this.commands.nc, ref).catch((error: unknown) => {
      throw new ApiError(
        503,
        'unavailable',
        `The conversation's log could not be removed now (${(error as Error).message}); try again.`,
      );
    });
    const notice: DeletionNotice = { ...ref, up_to_stream_seq: upToStreamSeq, reason, at: new Date().toISOString() };
    for (const hook of this.#onDeleted) {
      await hook(notice).catch((error: unknown) => {
        throw new ApiError(
          503,
          'unavailable',
          `The conversation's deletion could not be recorded now (${(error as Error).message}); try again.`,
        );
      });
    }
    await this.commands.snapshots.delete(ref);
    this.commands.index.forget(ref.tenant, ref.conversation);
  }

  /**
   * The sub-agents' conversations a conversation started (its subagent_started events, and the
   * child a pending task call may have been given just before a crash) and whose workspace it works
   * in (a sub-agent's shared one is its parent's): its log is read only when its snapshot counts such events.
   */
  async #delegationsOf(
    ref: ConversationRef,
    snapshot: ConversationSnapshot,
  ): Promise<{ children: ConversationRef[]; workspace: ConversationRef }> {
    const counted = (type: 'subagent_started' | 'subagent_task'): number =>
      Object.values(snapshot.event_counts[type] ?? {}).reduce((sum, count) => sum + (count ?? 0), 0);
    const children = new Set(
      snapshot.pending_actions
        .filter((action) => action.tool_name === TASK_TOOL)
        .map((action) => action.started_by ?? childConversationId(ref, action.id)),
    );
    let workspace = ref;
    if (counted('subagent_started') > 0 || counted('subagent_task') > 0) {
      for await (const commit of this.commands.log.read(ref)) {
        for (const event of commit.events) {
          if (event.type === 'subagent_started') children.add(event.child);
          else if (event.type === 'subagent_task') workspace = { tenant: ref.tenant, conversation: event.workspace };
        }
      }
    }
    return { children: [...children].map((conversation) => ({ tenant: ref.tenant, conversation })), workspace };
  }
}
