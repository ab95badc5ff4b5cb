import {
  approveCommand,
  interruptCommand,
  pauseCommand,
  rejectCommand,
  runCommand,
  type AgentCatalog,
} from '@flotilla/agent';
import type {
  CommandResult,
  Conversation,
  ConversationSpec,
  QueuedRun,
  CreateConversationBody,
  FinalResponse,
  ForkConversationBody,
  RewindBody,
  UpdateConversationBody,
  UpdateSpecBody,
} from '@flotilla/api';
import { draftEvent } from '@flotilla/events';
import type { ConversationRef, EventLog } from '@flotilla/log';
import type { DeletionNotice } from '@flotilla/runtime';
import type { ConversationSnapshot, CurrentSnapshot, SnapshotStore } from '@flotilla/state';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Admission } from './admission.js';
import { decideRewind } from './conversation-branching.js';
import { ConversationCommands } from './conversation-commands.js';
import { ConversationCreation } from './conversation-creation.js';
import { ConversationDeletion } from './conversation-deletion.js';
import type { ConversationIndex } from './conversation-index.js';
import { ConversationMessages, type UserMessage } from './conversation-messages.js';
import { ConversationSpecs } from './conversation-specs.js';
import { countableFromSnapshot, countEvents, countFromSnapshot, type EventFilter } from './event-search.js';
import { readFinalResponse } from './final-response.js';
import type { ImageWriter } from './message-images.js';

/**
 * Conversations as the gateway drives them: every change an appended event, every read from the
 * log. A command decides from the conversation's state at the log's tail, read as the KV snapshot
 * plus the commits after its position (`SnapshotStore.current`): its cost does not grow with the
 * conversation's history.
 *
 * The work is done by its parts, each in a file of its own: the commands and reads at the tail
 * (ConversationCommands), creation and forks (ConversationCreation), specs (ConversationSpecs),
 * messages and double-texting (ConversationMessages), deletion and expiry (ConversationDeletion),
 * rewinds (conversation-branching).
 */
export class ConversationService {
  readonly #commands: ConversationCommands;
  readonly #specs: ConversationSpecs;
  readonly #creation: ConversationCreation;
  readonly #messages: ConversationMessages;
  readonly #deletion: ConversationDeletion;

  constructor(
    readonly nc: NatsConnection,
    readonly log: EventLog,
    readonly snapshots: SnapshotStore,
    readonly index: ConversationIndex,
    readonly admission: Admission,
    /** The operator's agents: every conversation's spec is made from it. */
    readonly catalog: AgentCatalog,
    /** Where the images of user messages go (undefined: a message with images is answered 503). */
    readonly images?: ImageWriter,
  ) {
    this.#commands = new ConversationCommands(nc, log, snapshots, index, admission);
    this.#specs = new ConversationSpecs(this.#commands, catalog);
    this.#creation = new ConversationCreation(this.#commands, this.#specs);
    this.#messages = new ConversationMessages(this.#commands, this.#specs, images);
    this.#deletion = new ConversationDeletion(this.#commands, (ref, reason) => this.interrupt(ref, reason));
  }

  /** The conversation's snapshot, caught up with its log (404 when the log is empty). */
  snapshot(ref: ConversationRef): Promise<ConversationSnapshot> {
    return this.#commands.snapshot(ref);
  }

  get(ref: ConversationRef): Promise<Conversation> {
    return this.#commands.get(ref);
  }

  /** The conversation's run waiting for a slot of its tenant's, or null. */
  queued(ref: ConversationRef): QueuedRun | null {
    return this.#commands.queued(ref);
  }

  /**
   * Starts a queued run (the run starter, when a slot of its tenant's is free): the run command
   * without admission; a conversation running already is left as it is.
   */
  startQueued(ref: ConversationRef): Promise<CommandResult> {
    return this.#commands.command(ref, (state) => (state.status === 'running' ? [] : runCommand(state, ref)));
  }

  /** Create with a client-given or fresh id; an existing id returns it (created false). */
  create(tenant: string, body: CreateConversationBody): Promise<{ conversation: Conversation; created: boolean }> {
    return this.#creation.create(tenant, body);
  }

  /** A new conversation of the same tenant that starts from the parent's view after `at_seq` (see ConversationCreation.fork). */
  fork(parent: ConversationRef, body: ForkConversationBody): Promise<{ conversation: Conversation; created: boolean }> {
    return this.#creation.fork(parent, body);
  }

  /** Go on from after event `to_seq`, the conversation at rest with no call waiting (see decideRewind). */
  rewind(ref: ConversationRef, body: RewindBody): Promise<CommandResult> {
    return this.#commands.command(ref, decideRewind(this.log, ref, body));
  }

  async update(ref: ConversationRef, body: UpdateConversationBody): Promise<Conversation> {
    await this.#commands.command(ref, () => [
      draftEvent({ ...ref, source: 'user' }, 'state_change', {
        ...(body.title !== undefined ? { title: body.title } : {}),
        ...(body.tags !== undefined ? { tags: body.tags } : {}),
        reason: 'updated by the user',
      }),
    ]);
    return this.get(ref);
  }

  /** The spec in force (the default for a log without one). */
  spec(ref: ConversationRef): Promise<ConversationSpec> {
    return this.#specs.spec(ref);
  }

  /** A new spec, from the next step on; a spec changed meanwhile by another request is a 409 (see ConversationSpecs.update). */
  updateSpec(ref: ConversationRef, body: UpdateSpecBody): Promise<ConversationSpec> {
    return this.#specs.update(ref, body);
  }

  /** Also remove, when a conversation is deleted, what `hook` holds of it (called before the log is purged). */
  onDelete(hook: (ref: ConversationRef, workspace: ConversationRef) => Promise<void>): void {
    this.#deletion.onDelete(hook);
  }

  /**
   * Tell `hook` of each conversation deleted, once its log is purged and before its snapshot goes.
   * A failure fails the delete (503), but the log is gone by then: the conversation is not found
   * again, so no later delete tells of it (analytics.md, "Deleted conversations").
   */
  onDeleted(hook: (notice: DeletionNotice) => Promise<void>): void {
    this.#deletion.onDeleted(hook);
  }

  /** Remove the conversation's log, snapshot and what the delete hooks hold. A running conversation must be paused first. */
  delete(ref: ConversationRef): Promise<void> {
    return this.#deletion.delete(ref);
  }

  /** Removes the conversation as `delete` does if it has outlived its retention (see ConversationDeletion.expire). */
  expire(
    ref: ConversationRef,
    keptFor: (snapshot: ConversationSnapshot) => number | undefined,
    announce: (snapshot: ConversationSnapshot, seconds: number) => Promise<void>,
  ): Promise<boolean> {
    return this.#deletion.expire(ref, keptFor, announce);
  }

  /** A user message, its text and its images; while the conversation runs, its `on_busy` says what it does to the run (see ConversationMessages.send). */
  sendMessage(ref: ConversationRef, message: UserMessage, run: boolean): Promise<CommandResult> {
    return this.#messages.send(ref, message, run);
  }

  run(ref: ConversationRef): Promise<CommandResult> {
    return this.#commands.command(ref, (state) => runCommand(state, ref), { admit: true });
  }
  /** Pause; a run waiting in the queue is taken out of it (it would start a conversation the user paused). */
  async pause(ref: ConversationRef, reason?: string): Promise<CommandResult> {
    await this.admission.runQueue?.remove(ref);
    return this.#commands.command(ref, (state) => pauseCommand(state, ref, reason));
  }
  async interrupt(ref: ConversationRef, reason?: string): Promise<CommandResult> {
    await this.admission.runQueue?.remove(ref);
    return this.#commands.command(ref, (state) => interruptCommand(state, ref, reason));
  }
  condense(ref: ConversationRef): Promise<CommandResult> {
    return this.#commands.command(ref, () => [
      draftEvent({ ...ref, source: 'user' }, 'condensation_request', { reason: 'requested by the user' }),
    ]);
  }
  approve(ref: ConversationRef): Promise<CommandResult> {
    return this.#commands.command(ref, (state) => approveCommand(state, ref));
  }
  reject(ref: ConversationRef, reason: string): Promise<CommandResult> {
    return this.#commands.command(ref, (state) => rejectCommand(state, ref, reason));
  }

  /** The agent's last message (or finish message) since the last user message (see readFinalResponse). */
  async finalResponse(ref: ConversationRef): Promise<FinalResponse> {
    const { snapshot } = await this.current(ref);
    return readFinalResponse(this.log, ref, snapshot);
  }

  /** Events matching the filter: from the snapshot's counts by type and source, or (time ranges, text) by reading the log. */
  async countEvents(ref: ConversationRef, filter: EventFilter): Promise<number> {
    const unfiltered = filter.type === undefined && filter.source === undefined && countableFromSnapshot(filter);
    if (unfiltered || !countableFromSnapshot(filter)) return countEvents(this.log, ref, filter); // the tail's seq, or a read of the log
    return countFromSnapshot((await this.current(ref)).snapshot, filter);
  }

  /** The conversation at its log's tail (404 when the log is empty), reading only what its snapshot lacks. */
  current(ref: ConversationRef): Promise<CurrentSnapshot> {
    return this.#commands.current(ref);
  }

  /**
   * Runs `work` in the conversation's line of commands on this gateway, its place taken now (in
   * the order callers arrive); `bounded` work (a message) is refused past the line's bound. Every
   * command that appends to a conversation's log goes through here (the secrets' changes too).
   */
  inTurn<T>(ref: ConversationRef, work: () => Promise<T>, options: { bounded?: boolean } = {}): Promise<T> {
    return this.#commands.inTurn(ref, work, options);
  }
}
