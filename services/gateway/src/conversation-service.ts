import {
  approveCommand,
  CommandRefused,
  currentStatus,
  interruptCommand,
  messageCommand,
  pauseCommand,
  rejectCommand,
  runCommand,
} from '@flotilla/agent';
import type { CommandResult, Conversation, CreateConversationBody, FinalResponse, UpdateConversationBody } from '@flotilla/api';
import { draftEvent, newId, type ConversationStatus, type Event, type EventDraft } from '@flotilla/events';
import { appendWithRetry, EMPTY_TAIL, isConflict, type ConversationRef, type EventLog, type StoredCommit } from '@flotilla/log';
import { publishInterrupt, requestPurge } from '@flotilla/runtime';
import { isStateError, type ConversationSnapshot, type SnapshotStore } from '@flotilla/state';
import type { NatsConnection } from '@nats-io/transport-node';
import { ApiError } from './api-error.js';
import type { ConversationIndex } from './conversation-index.js';

export type Admission = { readonly maxRunning: number; readonly maxRunningPerTenant: number };

type Decide = (events: readonly Event[]) => EventDraft[];

/** Conversations as the gateway drives them: every change an appended event, every read from the log. */
export class ConversationService {
  /** What else a conversation's deletion removes (its workspace, its secrets), before its log goes. */
  readonly #onDelete: ((ref: ConversationRef) => Promise<void>)[] = [];

  constructor(
    readonly nc: NatsConnection,
    readonly log: EventLog,
    readonly snapshots: SnapshotStore,
    readonly index: ConversationIndex,
    readonly admission: Admission,
  ) {}

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
    return toResource(await this.snapshot(ref));
  }

  /** Create with a client-given or fresh id; an existing id returns it (created false). */
  async create(tenant: string, body: CreateConversationBody): Promise<{ conversation: Conversation; created: boolean }> {
    if (body.run && !body.message) throw new ApiError(400, 'validation_failed', 'body.run: starting a run needs a first message', [{ path: 'body.run', message: 'needs body.message' }]);
    const ref = { tenant, conversation: body.id ?? newId() };
    if (body.run) this.#admit(tenant);
    const context = { ...ref, source: 'system' as const };
    const drafts: EventDraft[] = [
      draftEvent(context, 'state_change', {
        status: 'idle',
        reason: 'conversation created',
        ...(body.title !== undefined ? { title: body.title } : {}),
        ...(body.tags !== undefined ? { tags: body.tags } : {}),
      }),
    ];
    if (body.message) drafts.push(...messageCommand([], ref, body.message, { run: body.run ?? false }));
    try {
      // expecting an empty log: of two creates of one id, exactly one wins (a fixed commit id would
      // let the stream's duplicate window swallow the second and report it created)
      await this.log.append(ref, drafts, { expected: EMPTY_TAIL });
    } catch (error) {
      if (!isConflict(error)) throw error;
      return { conversation: await this.get(ref), created: false };
    }
    return { conversation: await this.get(ref), created: true };
  }

  async update(ref: ConversationRef, body: UpdateConversationBody): Promise<Conversation> {
    await this.#command(ref, () => [
      draftEvent({ ...ref, source: 'user' }, 'state_change', {
        ...(body.title !== undefined ? { title: body.title } : {}),
        ...(body.tags !== undefined ? { tags: body.tags } : {}),
        reason: 'updated by the user',
      }),
    ]);
    return this.get(ref);
  }

  /** Also remove, when a conversation is deleted, what `hook` holds of it (called before the log is purged). */
  onDelete(hook: (ref: ConversationRef) => Promise<void>): void {
    this.#onDelete.push(hook);
  }

  /** Remove the conversation's log, snapshot and what the delete hooks hold. A running conversation must be paused first. */
  async delete(ref: ConversationRef): Promise<void> {
    const snapshot = await this.snapshot(ref);
    if (snapshot.status === 'running') throw new ApiError(409, 'conversation_running', 'The conversation is running: pause or interrupt it first.');
    for (const hook of this.#onDelete) await hook(ref);
    await requestPurge(this.nc, ref).catch((error: unknown) => {
      throw new ApiError(503, 'unavailable', `The conversation's log could not be removed now (${(error as Error).message}); try again.`);
    });
    await this.snapshots.delete(ref);
    this.index.forget(ref.tenant, ref.conversation);
  }

  sendMessage(ref: ConversationRef, text: string, run: boolean): Promise<CommandResult> {
    return this.#command(ref, (events) => messageCommand(events, ref, text, { run }), { admit: run });
  }
  run(ref: ConversationRef): Promise<CommandResult> {
    return this.#command(ref, (events) => runCommand(events, ref), { admit: true });
  }
  pause(ref: ConversationRef, reason?: string): Promise<CommandResult> {
    return this.#command(ref, (events) => pauseCommand(events, ref, reason));
  }
  async interrupt(ref: ConversationRef, reason?: string): Promise<CommandResult> {
    const result = await this.#command(ref, (events) => interruptCommand(events, ref, reason));
    if (result.appended) publishInterrupt(this.nc, ref);
    return result;
  }
  condense(ref: ConversationRef): Promise<CommandResult> {
    return this.#command(ref, () => [draftEvent({ ...ref, source: 'user' }, 'condensation_request', { reason: 'requested by the user' })]);
  }
  approve(ref: ConversationRef): Promise<CommandResult> {
    return this.#command(ref, (events) => approveCommand(events, ref));
  }
  reject(ref: ConversationRef, reason: string): Promise<CommandResult> {
    return this.#command(ref, (events) => rejectCommand(events, ref, reason));
  }

  /** The agent's last message (or finish message) since the last user message. */
  async finalResponse(ref: ConversationRef): Promise<FinalResponse> {
    const { events } = await this.#events(ref);
    let text: string | null = null;
    let seq: number | null = null;
    for (let index = events.length - 1; index >= 0; index -= 1) {
      const event = events[index]!;
      if (event.type === 'message' && event.role === 'user' && event.source === 'user') break;
      if (event.type === 'message' && event.role === 'assistant') {
        text = event.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n');
        seq = event.seq;
        break;
      }
      if (event.type === 'action' && event.tool_name === 'finish' && event.input && typeof event.input['message'] === 'string') {
        text = event.input['message'];
        seq = event.seq;
        break;
      }
    }
    return { text, seq, status: currentStatus(events) };
  }

  async #events(ref: ConversationRef): Promise<{ events: Event[] }> {
    const { events } = await this.log.readEvents(ref);
    if (events.length === 0) throw ApiError.notFound(ref.conversation);
    return { events };
  }

  /** Decide from the log at its tail and append with optimistic concurrency (re-deciding on conflicts). */
  async #command(ref: ConversationRef, decide: Decide, options: { admit?: boolean } = {}): Promise<CommandResult> {
    let status: ConversationStatus = 'idle';
    let lastSeq = 0;
    let commit: StoredCommit | null;
    try {
      commit = await appendWithRetry(this.log, ref, async (tail) => {
        if (tail.lastSeq === 0) throw ApiError.notFound(ref.conversation);
        const { events } = await this.log.readEvents(ref, { until: tail });
        status = currentStatus(events);
        lastSeq = tail.lastSeq;
        const drafts = decide(events);
        const starts = drafts.some((draft) => draft.type === 'state_change' && draft.status === 'running');
        if (options.admit && starts && status !== 'running') this.#admit(ref.tenant);
        return drafts;
      });
    } catch (error) {
      if (error instanceof CommandRefused) {
        throw new ApiError(409, error.code, error.message);
      }
      throw error;
    }
    if (!commit) return { conversation: ref.conversation, status, last_seq: lastSeq, appended: false };
    const events = commit.events;
    const after = currentStatusAfter(events, status);
    await this.snapshot(ref).catch(() => undefined); // this gateway's index (lists, admission) sees its own writes
    return { conversation: ref.conversation, status: after, last_seq: commit.lastSeq, appended: true };
  }

  /** 429 when starting one more run would pass the configured capacity. */
  #admit(tenant: string): void {
    const { maxRunning, maxRunningPerTenant } = this.admission;
    const full =
      (maxRunning > 0 && this.index.running() >= maxRunning) || (maxRunningPerTenant > 0 && this.index.running(tenant) >= maxRunningPerTenant);
    if (full) {
      throw new ApiError(429, 'capacity_exhausted', 'Run capacity is exhausted: retry after the given delay, or send the message without run.', undefined, 5);
    }
  }
}

/** The status after appending `events` to a log whose status was `before`. */
function currentStatusAfter(events: readonly Event[], before: ConversationStatus): ConversationStatus {
  return events.some((event) => event.type === 'state_change' && event.status !== undefined) ? currentStatus(events) : before;
}

export function toResource(snapshot: ConversationSnapshot): Conversation {
  return {
    id: snapshot.conversation,
    status: snapshot.status,
    title: snapshot.title,
    tags: snapshot.tags,
    created_at: snapshot.created_at,
    updated_at: snapshot.updated_at,
    last_seq: snapshot.last_seq,
    counters: snapshot.counters,
    usage: snapshot.usage,
    last_error: snapshot.last_error,
  };
}

