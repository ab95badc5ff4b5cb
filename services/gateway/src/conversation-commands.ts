import { CommandRefused, type CommandState } from '@flotilla/agent';
import type { CommandResult, Conversation, QueuedRun } from '@flotilla/api';
import { withPositionalIds, type EventDraft } from '@flotilla/events';
import {
  appendSurely,
  isConflict,
  type ConversationRef,
  type EventLog,
  type StoredCommit,
  type Tail,
} from '@flotilla/log';
import { publishInterrupt } from '@flotilla/runtime';
import {
  foldCommits,
  isStateError,
  type ConversationSnapshot,
  type CurrentSnapshot,
  type SnapshotStore,
} from '@flotilla/state';
import type { NatsConnection } from '@nats-io/transport-node';
import { admitRun, type Admission } from './admission.js';
import { ApiError } from './api-error.js';
import { CommandQueue } from './command-queue.js';
import type { ConversationIndex } from './conversation-index.js';
import { toResource } from './conversation-resource.js';

export type Decide = (state: CommandState, current: CurrentSnapshot) => EventDraft[] | Promise<EventDraft[]>;

/** Re-decisions after conflicts before a command gives up, and how long it retries transient failures (as appendWithRetry). */
const MAX_CONFLICTS = 50;
const TRANSIENT_BUDGET_MS = 30_000;
const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * What every part of ConversationService reads and writes through: a conversation's state at its
 * log's tail (the KV snapshot plus the commits after its position), and its commands, each decided
 * from that state and appended expecting that tail, one at a time per conversation on this gateway,
 * a run among them admitted (or queued) by the running limits.
 */
export class ConversationCommands {
  /** This gateway's commands, one at a time per conversation (see CommandQueue). */
  readonly #queue: CommandQueue;

  constructor(
    readonly nc: NatsConnection,
    readonly log: EventLog,
    readonly snapshots: SnapshotStore,
    readonly index: ConversationIndex,
    readonly admission: Admission,
  ) {
    this.#queue = new CommandQueue(admission.maxQueuedMessages ?? 0);
  }

  /** The conversation's snapshot, caught up with its log (404 when the log is empty). */
  async snapshot(ref: ConversationRef): Promise<ConversationSnapshot> {
    let snapshot: ConversationSnapshot;
    try {
      snapshot = (await this.snapshots.catchUp(ref, this.log)).snapshot;
    } catch (error) {
      if (!isStateError(error) || error.code !== 'snapshot_ahead') throw error;
      snapshot = (await this.snapshots.rebuild(ref, this.log)).snapshot; // a deleted log's stale snapshot
    }
    if (snapshot.last_seq === 0) throw ApiError.notFound(ref.conversation);
    this.index.upsert(snapshot);
    return snapshot;
  }

  async get(ref: ConversationRef): Promise<Conversation> {
    return toResource(await this.snapshot(ref), this.queued(ref));
  }

  /** The conversation's run waiting for a slot of its tenant's, or null. */
  queued(ref: ConversationRef): QueuedRun | null {
    return this.admission.runQueue?.position(ref) ?? null;
  }

  /** The conversation at its log's tail (404 when the log is empty), reading only what its snapshot lacks. */
  async current(ref: ConversationRef): Promise<CurrentSnapshot> {
    const current = await this.snapshots.current(ref, this.log);
    if (current.tail.lastSeq === 0) throw ApiError.notFound(ref.conversation);
    return current;
  }

  /** Whether one more run of the tenant may start now, or waits in the queue (see admitRun). */
  admit(tenant: string): 'start' | 'queue' {
    return admitRun(this.admission, this.index, tenant);
  }

  /**
   * Decide from the state at the log's tail (the snapshot and the commits after it, read beside
   * the tail) and append expecting that tail; on a conflict, read and decide again. A transient
   * failure retries the same commit (same id, same expected tail: `appendSurely`).
   * Commands on one conversation wait their turn on this gateway (`bounded` ones, messages, are
   * refused past the configured line length).
   */
  command(ref: ConversationRef, decide: Decide, options: { admit?: boolean } = {}): Promise<CommandResult> {
    return this.inTurn(ref, () => this.decideAndAppend(ref, decide, options));
  }

  /**
   * Runs `work` in the conversation's line of commands on this gateway, its place taken now (in
   * the order callers arrive); `bounded` work (a message) is refused past the line's bound. Every
   * command that appends to a conversation's log goes through here (the secrets' changes too).
   */
  inTurn<T>(ref: ConversationRef, work: () => Promise<T>, options: { bounded?: boolean } = {}): Promise<T> {
    return this.#queue.run(`${ref.tenant}.${ref.conversation}`, work, { bounded: options.bounded ?? false });
  }

  /** A command's work in its turn (`command` without taking one: for work already in the conversation's turn). */
  async decideAndAppend(ref: ConversationRef, decide: Decide, options: { admit?: boolean }): Promise<CommandResult> {
    const deadline = Date.now() + TRANSIENT_BUDGET_MS;
    for (let conflicts = 0; ;) {
      const current = await this.current(ref);
      let drafts: EventDraft[];
      try {
        drafts = await decide(current.snapshot, current);
      } catch (error) {
        if (error instanceof CommandRefused) throw new ApiError(409, error.code, error.message);
        throw error;
      }
      if (drafts.length === 0)
        return {
          conversation: ref.conversation,
          status: current.snapshot.status,
          last_seq: current.tail.lastSeq,
          appended: false,
        };
      const starts = drafts.some(isRunStart);
      // past the tenant's limit the run waits in the queue: what else the command says is appended now, without it
      const queued =
        options.admit === true && starts && current.snapshot.status !== 'running' && this.admit(ref.tenant) === 'queue';
      if (queued) {
        drafts = drafts.filter((draft) => !isRunStart(draft));
        if (drafts.length === 0) {
          await this.admission.runQueue!.enqueue(ref);
          return {
            conversation: ref.conversation,
            status: current.snapshot.status,
            last_seq: current.tail.lastSeq,
            appended: false,
            ...this.#queueField(ref),
          };
        }
      }
      const commit = await this.#append(
        ref,
        withPositionalIds(drafts, current.tail.lastSeq + 1),
        current.tail,
        deadline,
      );
      if (!commit) {
        conflicts += 1;
        if (conflicts > MAX_CONFLICTS)
          throw new ApiError(
            503,
            'unavailable',
            'Too many concurrent changes to this conversation; retry.',
            undefined,
            1,
          );
        await pause(Math.random() * Math.min(5 * conflicts, 50));
        continue;
      }
      // whoever holds the run's work in flight stops it (work the commit itself wakes goes on)
      if (drafts.some((draft) => draft.type === 'interrupt')) publishInterrupt(this.nc, ref, commit.streamSeq);
      const after = foldCommits(current.snapshot, [commit]);
      // this gateway's index (lists, admission) sees its own write at once; the snapshot is written
      // on with the commits this command read and appended (one KV write, no read: a projector that
      // got there first wins), so the next command finds it current
      this.index.upsert(after);
      await this.snapshots.advanceKnown(ref, current.stored, [...current.commits, commit]).catch(() => undefined);
      if (queued) await this.admission.runQueue!.enqueue(ref);
      return {
        conversation: ref.conversation,
        status: after.status,
        last_seq: commit.lastSeq,
        appended: true,
        ...(queued ? this.#queueField(ref) : {}),
      };
    }
  }

  /** Appends expecting `tail`; null when another writer moved the tail (a conflict). */
  async #append(
    ref: ConversationRef,
    drafts: readonly EventDraft[],
    tail: Tail,
    deadline: number,
  ): Promise<StoredCommit | null> {
    try {
      return await appendSurely(this.log, ref, drafts, { expected: tail, deadline });
    } catch (error) {
      if (isConflict(error)) return null;
      throw error;
    }
  }

  #queueField(ref: ConversationRef): { queue?: QueuedRun } {
    const queue = this.queued(ref);
    return queue ? { queue } : {};
  }
}

function isRunStart(draft: EventDraft): boolean {
  return draft.type === 'state_change' && draft.status === 'running';
}
