import {
  approveCommand,
  childConversationId,
  CommandRefused,
  readAgentSpec,
  SpecRefused,
  type AgentCatalog,
  type AgentSpec,
  type SpecRequest,
  interruptCommand,
  interruptForMessage,
  messageCommand,
  pauseCommand,
  rejectCommand,
  runCommand,
  TASK_TOOL,
  type CommandState,
} from '@flotilla/agent';
import type {
  CommandResult,
  Conversation,
  ConversationSpec,
  QueuedRun,
  CreateConversationBody,
  FinalResponse,
  ForkConversationBody,
  ImageUpload,
  RewindBody,
  UpdateConversationBody,
  UpdateSpecBody,
} from '@flotilla/api';
import {
  draftEvent,
  newId,
  withPositionalIds,
  type AgentSpecEvent,
  type Event,
  type EventDraft,
  type OnBusy,
} from '@flotilla/events';
import {
  appendSurely,
  EMPTY_TAIL,
  isConflict,
  type ConversationRef,
  type EventLog,
  type StoredCommit,
  type Tail,
} from '@flotilla/log';
import { publishInterrupt, requestPurge, type DeletionNotice } from '@flotilla/runtime';
import {
  foldCommits,
  initialState,
  isStateError,
  type ConversationSnapshot,
  type CurrentSnapshot,
  type SnapshotStore,
} from '@flotilla/state';
import { buildView, planBranch, unmatchedActions } from '@flotilla/view';
import type { NatsConnection } from '@nats-io/transport-node';
import { ApiError } from './api-error.js';
import { CommandQueue } from './command-queue.js';
import type { ConversationIndex } from './conversation-index.js';
import { countableFromSnapshot, countEvents, countFromSnapshot, type EventFilter } from './event-search.js';
import { storeMessageImages, type ImageWriter } from './message-images.js';
import type { RunQueue } from './run-queue.js';

export type Admission = {
  readonly maxRunning: number;
  readonly maxRunningPerTenant: number;
  /**
   * Where runs past `maxRunningPerTenant` wait for a slot, in order (the queue every gateway
   * shares). Without it they are refused with 429, as runs past `maxRunning` always are.
   */
  readonly runQueue?: RunQueue;
  /** Messages waiting in one conversation's command line on this gateway before more are refused with 429 (0 = no limit). */
  readonly maxQueuedMessages?: number;
};

type Decide = (state: CommandState, current: CurrentSnapshot) => EventDraft[] | Promise<EventDraft[]>;

/** Re-decisions after conflicts before a command gives up, and how long it retries transient failures (as appendWithRetry). */
const MAX_CONFLICTS = 50;
const TRANSIENT_BUDGET_MS = 30_000;
const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Conversations as the gateway drives them: every change an appended event, every read from the
 * log. A command decides from the conversation's state at the log's tail, read as the KV snapshot
 * plus the commits after its position (`SnapshotStore.current`): its cost does not grow with the
 * conversation's history.
 */
export class ConversationService {
  /** What else a conversation's deletion removes (its workspace, its secrets), before its log goes. */
  readonly #onDelete: ((ref: ConversationRef, workspace: ConversationRef) => Promise<void>)[] = [];
  readonly #onDeleted: ((notice: DeletionNotice) => Promise<void>)[] = [];
  /** This gateway's commands, one at a time per conversation (see CommandQueue). */
  readonly #queue: CommandQueue;

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

  /**
   * Starts a queued run (the run starter, when a slot of its tenant's is free): the run command
   * without admission; a conversation running already is left as it is.
   */
  startQueued(ref: ConversationRef): Promise<CommandResult> {
    return this.#command(ref, (state) => (state.status === 'running' ? [] : runCommand(state, ref)));
  }

  /** Create with a client-given or fresh id; an existing id returns it (created false). */
  async create(
    tenant: string,
    body: CreateConversationBody,
  ): Promise<{ conversation: Conversation; created: boolean }> {
    checkRunHasMessage(body);
    const ref = { tenant, conversation: body.id ?? newId() };
    const { spec, template } = this.#resolveSpec({
      ...(body.template !== undefined ? { template: body.template } : {}),
      ...(body.spec !== undefined ? { spec: body.spec } : {}),
    });
    const admitted = body.run ? this.#admit(tenant) : 'start';
    const context = { ...ref, source: 'system' as const };
    const drafts: EventDraft[] = [
      draftEvent(context, 'state_change', {
        status: 'idle',
        reason: 'conversation created',
        ...(body.title !== undefined ? { title: body.title } : {}),
        ...(body.tags !== undefined ? { tags: body.tags } : {}),
      }),
      // how its steps are made is in its log from the start (DESIGN invariant 14)
      specDraft(ref, spec, 'conversation created', template),
    ];
    return this.#createAdmitted(ref, drafts, body, admitted);
  }

  /**
   * A new conversation of the same tenant that starts from the parent's view after `at_seq`: its
   * first commit holds its spec (the parent's in force, or the one asked for), a `branch` event
   * naming the parent and the point, and copies of that view (nothing outside it: no control
   * events, nothing a condensation forgot). The parent is not written to.
   */
  async fork(
    parent: ConversationRef,
    body: ForkConversationBody,
  ): Promise<{ conversation: Conversation; created: boolean }> {
    checkRunHasMessage(body);
    const { snapshot, tail } = await this.current(parent);
    const { events } = await this.log.readEvents(parent, { until: tail });
    const seq = body.at_seq ?? tail.lastSeq;
    checkBranchPoint(snapshot, events, seq, 'body.at_seq');
    const ownSpec = body.template !== undefined || body.spec !== undefined;
    const base = ownSpec ? undefined : await this.#specEvent(parent, snapshot);
    const baseSpec = base ? readAgentSpec(base) : undefined;
    const { spec, template } = ownSpec
      ? this.#resolveSpec({
          ...(body.template !== undefined ? { template: body.template } : {}),
          ...(body.spec !== undefined ? { spec: body.spec } : {}),
        })
      : { spec: baseSpec?.ok ? baseSpec.spec : this.catalog.defaultSpec, template: base?.template };
    const ref = { tenant: parent.tenant, conversation: body.id ?? newId() };
    // a child with the parent's spec keeps the parent's system prompt; another spec makes its own
    const plan = planBranch(undefined, buildView(events.filter((event) => event.seq <= seq)), ref, {
      systemPrompt: !ownSpec,
    });
    const admitted = body.run ? this.#admit(ref.tenant) : 'start';
    const title = body.title ?? (snapshot.title === null ? undefined : `${snapshot.title.slice(0, 193)} (fork)`);
    const drafts: EventDraft[] = [
      draftEvent({ ...ref, source: 'system' }, 'state_change', {
        status: 'idle',
        reason: `forked from ${parent.conversation} after event ${seq}`,
        ...(title !== undefined ? { title } : {}),
        tags: body.tags ?? snapshot.tags,
      }),
      specDraft(ref, spec, `forked from ${parent.conversation}`, template),
      draftEvent({ ...ref, source: 'user' }, 'branch', {
        kind: 'fork',
        from: { conversation: parent.conversation, seq },
        forgotten_event_ids: [],
        copied: plan.copies.length,
      }),
      ...plan.copies,
    ];
    return this.#createAdmitted(ref, drafts, body, admitted);
  }

  /** A new conversation; a run the tenant's limit queues starts it without running, then waits in the queue. */
  async #createAdmitted(
    ref: ConversationRef,
    drafts: readonly EventDraft[],
    body: { readonly message?: string; readonly run?: boolean },
    admitted: 'start' | 'queue',
  ): Promise<{ conversation: Conversation; created: boolean }> {
    if (admitted === 'start') return this.#createWith(ref, drafts, body);
    const result = await this.#createWith(ref, drafts, { ...body, run: false });
    if (!result.created) return result;
    await this.admission.runQueue!.enqueue(ref);
    return { conversation: await this.get(ref), created: true };
  }

  /**
   * Go on from after event `to_seq`: one commit with a `branch` event that forgets what the view
   * holds past that point, copies of what it held there and no longer does (what condensations
   * since forgot), and the status back to idle. The conversation must be at rest with no call
   * waiting (pause or interrupt a run first; approve or reject pending calls).
   */
  rewind(ref: ConversationRef, body: RewindBody): Promise<CommandResult> {
    return this.#command(ref, async (state, current) => {
      if (state.status === 'running')
        throw new ApiError(409, 'conversation_running', 'The conversation is running: pause or interrupt it first.');
      if (state.pending_actions.length > 0)
        throw new ApiError(
          409,
          'conversation_running',
          'Calls wait for their results or a confirmation: approve or reject them first.',
        );
      const { events } = await this.log.readEvents(ref, { until: current.tail });
      checkBranchPoint(current.snapshot, events, body.to_seq, 'body.to_seq');
      if (body.to_seq === current.tail.lastSeq) return [];
      return [
        ...rewindDrafts(ref, events, body.to_seq, body.reason),
        ...(state.status === 'idle'
          ? []
          : [
              draftEvent({ ...ref, source: 'user' }, 'state_change', {
                status: 'idle',
                reason: `rewound to event ${body.to_seq}`,
              }),
            ]),
      ];
    });
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

  /** The spec in force: its agent_spec event, read with one direct get where the snapshot says it is (the default for a log without one). */
  async spec(ref: ConversationRef): Promise<ConversationSpec> {
    const { snapshot } = await this.current(ref);
    const event = await this.#specEvent(ref, snapshot);
    if (!event) return { spec: this.catalog.defaultSpec, seq: null, template: null, reason: null };
    return { spec: event.spec, seq: event.seq, template: event.template ?? null, reason: event.reason };
  }

  /**
   * A new spec, from the next step on: the request's template and fields over the spec in force,
   * made and checked as at creation, appended as an agent_spec event. A spec changed meanwhile by
   * another request is a 409 (the fields were meant for the one read).
   */
  async updateSpec(ref: ConversationRef, body: UpdateSpecBody): Promise<ConversationSpec> {
    const { snapshot } = await this.current(ref);
    const event = await this.#specEvent(ref, snapshot);
    // an unreadable spec (a newer schema's) is not a base to build on: the request's fields go over the default
    const current = event ? readAgentSpec(event) : undefined;
    const base = current?.ok ? current.spec : this.catalog.defaultSpec;
    const { spec, template } = this.#resolveSpec(
      {
        ...(body.template !== undefined ? { template: body.template } : {}),
        ...(body.spec !== undefined ? { spec: body.spec } : {}),
      },
      base,
    );
    const seenSeq = snapshot.agent_spec?.seq ?? null;
    await this.#command(ref, (state) => {
      if (((state as ConversationSnapshot).agent_spec?.seq ?? null) !== seenSeq)
        throw new ApiError(409, 'conflict', "The conversation's spec changed meanwhile: read it again and retry.");
      return [specDraft(ref, spec, body.reason ?? 'changed by the user', template)];
    });
    return this.spec(ref);
  }

  /** Also remove, when a conversation is deleted, what `hook` holds of it (called before the log is purged). */
  onDelete(hook: (ref: ConversationRef, workspace: ConversationRef) => Promise<void>): void {
    this.#onDelete.push(hook);
  }

  /**
   * Tell `hook` of each conversation deleted, once its log is purged (and before its snapshot goes:
   * a failure fails the delete, and deleting it again tells again).
   */
  onDeleted(hook: (notice: DeletionNotice) => Promise<void>): void {
    this.#onDeleted.push(hook);
  }

  /** Remove the conversation's log, snapshot and what the delete hooks hold. A running conversation must be paused first. */
  async delete(ref: ConversationRef): Promise<void> {
    const snapshot = await this.snapshot(ref);
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
    return this.inTurn(ref, async () => {
      const snapshot = await this.snapshot(ref).catch((error: unknown) => {
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
      let state = await this.snapshot(child).catch((error: unknown) => {
        if (error instanceof ApiError && error.statusCode === 404) return undefined;
        throw error;
      });
      if (!state) continue;
      if (state.status === 'running') {
        await this.interrupt(child, 'its parent conversation is deleted');
        state = await this.snapshot(child);
      }
      await this.#remove(child, state, reason);
    }
    // a run of it waiting for a slot would start a conversation that is no more
    await this.admission.runQueue?.remove(ref);
    for (const hook of this.#onDelete) await hook(ref, workspace);
    const { upToStreamSeq } = await requestPurge(this.nc, ref).catch((error: unknown) => {
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
    await this.snapshots.delete(ref);
    this.index.forget(ref.tenant, ref.conversation);
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
      for await (const commit of this.log.read(ref)) {
        for (const event of commit.events) {
          if (event.type === 'subagent_started') children.add(event.child);
          else if (event.type === 'subagent_task') workspace = { tenant: ref.tenant, conversation: event.workspace };
        }
      }
    }
    return { children: [...children].map((conversation) => ({ tenant: ref.tenant, conversation })), workspace };
  }

  /**
   * A user message: its text and its images (checked, stored in the images bucket and named in
   * the event; refused with 400 images_not_supported when the spec in force has a model that does
   * not take images, before anything is stored). While the conversation runs, its `on_busy` (else
   * the spec's) says what it does to the run (OnBusy; `#busyDrafts`).
   */
  sendMessage(
    ref: ConversationRef,
    message: {
      readonly text?: string;
      readonly images?: readonly ImageUpload[];
      readonly on_busy?: OnBusy | undefined;
    },
    run: boolean,
  ): Promise<CommandResult> {
    // the turn is taken on arrival, the images stored in it: a message keeps its place among the commands around it
    return this.inTurn(
      ref,
      async () => {
        const uploads = message.images ?? [];
        if (uploads.length > 0) await this.#takesImages(ref);
        const images = await storeMessageImages(this.images, ref.tenant, uploads, 'body.images');
        return this.#decideAndAppend(
          ref,
          async (state, current) => [
            ...(state.status === 'running'
              ? await this.#busyDrafts(
                  ref,
                  current,
                  message.on_busy ?? current.snapshot.agent_spec?.on_busy ?? 'enqueue',
                )
              : []),
            ...messageCommand(state, ref, message.text ?? '', { run, images }),
          ],
          { admit: run },
        );
      },
      { bounded: true },
    );
  }

  /**
   * What comes before a message to a running conversation: nothing (`enqueue`); a 409 naming
   * where the run began (`reject`); an interrupt and the rejection of calls not started
   * (`interrupt`); those and a rewind to where the run began (`rollback`): what the run did
   * since leaves the model's view, the log keeping it (the point moves back past calls still
   * waiting there, so the view holds no call without its answer).
   */
  async #busyDrafts(ref: ConversationRef, current: CurrentSnapshot, onBusy: OnBusy): Promise<EventDraft[]> {
    const { snapshot, tail } = current;
    const run = snapshot.run_started;
    switch (onBusy) {
      case 'enqueue':
        return [];
      case 'reject':
        throw new ApiError(
          409,
          'conversation_busy',
          `The conversation is running${run ? ` (the run began at event ${run.seq}, ${run.at})` : ''}: wait for it to end, or send the message with on_busy enqueue, interrupt or rollback.`,
        );
      case 'interrupt':
        return interruptForMessage(snapshot, ref);
      case 'rollback': {
        const stop = interruptForMessage(snapshot, ref);
        if (!run) return stop;
        const { events } = await this.log.readEvents(ref, { until: tail });
        const point = answeredPointAtOrBefore(events, run.seq);
        if (point === 0 || point >= tail.lastSeq) return stop;
        checkBranchPoint(snapshot, events, point, 'on_busy');
        return [...stop, ...rewindDrafts(ref, events, point, 'rolled back by a new user message')];
      }
    }
  }

  run(ref: ConversationRef): Promise<CommandResult> {
    return this.#command(ref, (state) => runCommand(state, ref), { admit: true });
  }
  /** Pause; a run waiting in the queue is taken out of it (it would start a conversation the user paused). */
  async pause(ref: ConversationRef, reason?: string): Promise<CommandResult> {
    await this.admission.runQueue?.remove(ref);
    return this.#command(ref, (state) => pauseCommand(state, ref, reason));
  }
  async interrupt(ref: ConversationRef, reason?: string): Promise<CommandResult> {
    await this.admission.runQueue?.remove(ref);
    return this.#command(ref, (state) => interruptCommand(state, ref, reason));
  }
  condense(ref: ConversationRef): Promise<CommandResult> {
    return this.#command(ref, () => [
      draftEvent({ ...ref, source: 'user' }, 'condensation_request', { reason: 'requested by the user' }),
    ]);
  }
  approve(ref: ConversationRef): Promise<CommandResult> {
    return this.#command(ref, (state) => approveCommand(state, ref));
  }
  reject(ref: ConversationRef, reason: string): Promise<CommandResult> {
    return this.#command(ref, (state) => rejectCommand(state, ref, reason));
  }

  /**
   * The agent's last message (or finish message) since the last user message: the snapshot says
   * where it is, and one direct get reads its commit.
   */
  async finalResponse(ref: ConversationRef): Promise<FinalResponse> {
    const { snapshot } = await this.current(ref);
    const position = snapshot.final_response;
    if (!position) return { text: null, seq: null, status: snapshot.status };
    const from = {
      afterSeq: position.seq - 1,
      afterStreamSeq: position.stream_seq - 1,
      untilStreamSeq: position.stream_seq,
    };
    let event: Event | undefined;
    for await (const commit of this.log.read(ref, from))
      event ??= commit.events.find((candidate) => candidate.seq === position.seq);
    return { text: event ? responseText(event) : null, seq: event ? event.seq : null, status: snapshot.status };
  }

  /** Events matching the filter: from the snapshot's counts by type and source, or (time ranges, text) by reading the log. */
  async countEvents(ref: ConversationRef, filter: EventFilter): Promise<number> {
    const unfiltered = filter.type === undefined && filter.source === undefined && countableFromSnapshot(filter);
    if (unfiltered || !countableFromSnapshot(filter)) return countEvents(this.log, ref, filter); // the tail's seq, or a read of the log
    return countFromSnapshot((await this.current(ref)).snapshot, filter);
  }

  /** The conversation at its log's tail (404 when the log is empty), reading only what its snapshot lacks. */
  async current(ref: ConversationRef): Promise<CurrentSnapshot> {
    const current = await this.snapshots.current(ref, this.log);
    if (current.tail.lastSeq === 0) throw ApiError.notFound(ref.conversation);
    return current;
  }

  /**
   * Decide from the state at the log's tail (the snapshot and the commits after it, read beside
   * the tail) and append expecting that tail; on a conflict, read and decide again. A transient
   * failure retries the same commit (same id, same expected tail: `appendSurely`).
   * Commands on one conversation wait their turn on this gateway (`bounded` ones, messages, are
   * refused past the configured line length).
   */
  #command(ref: ConversationRef, decide: Decide, options: { admit?: boolean } = {}): Promise<CommandResult> {
    return this.inTurn(ref, () => this.#decideAndAppend(ref, decide, options));
  }

  /**
   * Runs `work` in the conversation's line of commands on this gateway, its place taken now (in
   * the order callers arrive); `bounded` work (a message) is refused past the line's bound. Every
   * command that appends to a conversation's log goes through here (the secrets' changes too).
   */
  inTurn<T>(ref: ConversationRef, work: () => Promise<T>, options: { bounded?: boolean } = {}): Promise<T> {
    return this.#queue.run(`${ref.tenant}.${ref.conversation}`, work, { bounded: options.bounded ?? false });
  }

  async #decideAndAppend(ref: ConversationRef, decide: Decide, options: { admit?: boolean }): Promise<CommandResult> {
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
        options.admit === true &&
        starts &&
        current.snapshot.status !== 'running' &&
        this.#admit(ref.tenant) === 'queue';
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

  /**
   * A new conversation's first commit (with the body's first message and run, if any), expecting
   * an empty log: of two creates of one id, exactly one wins and the other gets the existing
   * conversation (under a fixed commit id the second would find the first's commit as its own and
   * report it created).
   */
  async #createWith(
    ref: ConversationRef,
    drafts: readonly EventDraft[],
    body: { readonly message?: string; readonly run?: boolean },
  ): Promise<{ conversation: Conversation; created: boolean }> {
    const first = body.message
      ? [...drafts, ...messageCommand(initialState(), ref, body.message, { run: body.run ?? false })]
      : drafts;
    try {
      await appendSurely(this.log, ref, withPositionalIds(first, 1), { expected: EMPTY_TAIL });
    } catch (error) {
      if (!isConflict(error)) throw error;
      return { conversation: await this.get(ref), created: false };
    }
    return { conversation: await this.get(ref), created: true };
  }

  /** A spec from a request, or the request's refusal as the API's error (400 invalid, 403 outside the operator's limits), naming the field. */
  #resolveSpec(request: SpecRequest, base?: AgentSpec): { spec: AgentSpec; template?: string } {
    try {
      return this.catalog.resolve(request, base);
    } catch (error) {
      if (!(error instanceof SpecRefused)) throw error;
      const issues = error.issues.map((issue) => ({ path: `body.${issue.path}`, message: issue.message }));
      const first = issues[0]!;
      throw new ApiError(
        error.status,
        error.status === 403 ? 'spec_not_allowed' : 'validation_failed',
        `${first.path}: ${first.message}`,
        issues,
      );
    }
  }

  /** 400 images_not_supported when the model of the conversation's spec in force does not take images (404 when there is no conversation). */
  async #takesImages(ref: ConversationRef): Promise<void> {
    const { spec } = await this.spec(ref);
    const llm = (spec as { llm?: { vision?: unknown; model?: unknown } }).llm;
    if (llm?.vision !== false) return;
    const issues = [{ path: 'body.images', message: `the model ${String(llm.model)} does not take images` }];
    throw new ApiError(
      400,
      'images_not_supported',
      `body.images: the conversation's model (${String(llm.model)}) does not take images (its spec says llm.vision: false): send text only, or switch to a model that takes them (PATCH …/spec)`,
      issues,
    );
  }

  /** The agent_spec event the snapshot points to, if any. */
  async #specEvent(ref: ConversationRef, snapshot: ConversationSnapshot): Promise<AgentSpecEvent | undefined> {
    const position = snapshot.agent_spec;
    if (!position) return undefined;
    const from = {
      afterSeq: position.seq - 1,
      afterStreamSeq: position.stream_seq - 1,
      untilStreamSeq: position.stream_seq,
    };
    let found: AgentSpecEvent | undefined;
    for await (const commit of this.log.read(ref, from)) {
      for (const event of commit.events) if (event.seq === position.seq && event.type === 'agent_spec') found = event;
    }
    return found;
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

  /**
   * Whether one more run of the tenant may start now: 429 past the deployment's capacity; past the
   * tenant's limit (or behind runs of the tenant already waiting: they keep their order) 'queue'
   * when a run queue is configured, else 429.
   */
  #admit(tenant: string): 'start' | 'queue' {
    const { maxRunning, maxRunningPerTenant, runQueue } = this.admission;
    const tenantFull =
      maxRunningPerTenant > 0 &&
      (this.index.running(tenant) >= maxRunningPerTenant || (runQueue?.waiting(tenant) ?? 0) > 0);
    if (tenantFull && runQueue) return 'queue';
    if ((maxRunning > 0 && this.index.running() >= maxRunning) || tenantFull) {
      throw new ApiError(
        429,
        'capacity_exhausted',
        'Run capacity is exhausted: retry after the given delay, or send the message without run.',
        undefined,
        5,
      );
    }
    return 'start';
  }

  #queueField(ref: ConversationRef): { queue?: QueuedRun } {
    const queue = this.queued(ref);
    return queue ? { queue } : {};
  }
}

/** 400 for a body that starts a run without a first message. */
function checkRunHasMessage(body: { readonly message?: string; readonly run?: boolean }): void {
  if (body.run && !body.message)
    throw new ApiError(400, 'validation_failed', 'body.run: starting a run needs a first message', [
      { path: 'body.run', message: 'needs body.message' },
    ]);
}

/**
 * 400 when `seq` is past the log, 409 not_a_branch_point when a rewind left it or a call waits for
 * its result there (a branch copies answered calls only).
 */
function checkBranchPoint(snapshot: ConversationSnapshot, events: readonly Event[], seq: number, path: string): void {
  const last = events.at(-1)?.seq ?? 0;
  if (seq > last)
    throw new ApiError(400, 'validation_failed', `${path}: the conversation has ${last} events`, [
      { path, message: `at most ${last}` },
    ]);
  const range = snapshot.abandoned.find((abandoned) => abandoned.first <= seq && seq <= abandoned.last);
  if (range)
    throw new ApiError(
      409,
      'not_a_branch_point',
      `${path}: event ${seq} is on a branch a rewind left (events ${range.first}–${range.last}); pick an event of the current branch`,
    );
  const waiting = unmatchedActions(events.filter((event) => event.seq <= seq));
  if (waiting.length > 0) {
    throw new ApiError(
      409,
      'not_a_branch_point',
      `${path}: after event ${seq} ${waiting.length} call(s) still wait for their results (${waiting.map((action) => action.tool_name).join(', ')}); pick a point before the call or after its result`,
    );
  }
}

/** The latest seq at or before `seq` after which no call waits for its answer (0: none). */
function answeredPointAtOrBefore(events: readonly Event[], seq: number): number {
  let point = seq;
  for (;;) {
    const waiting = unmatchedActions(events.filter((event) => event.seq <= point));
    if (waiting.length === 0) return point;
    point = Math.min(...waiting.map((action) => action.seq)) - 1;
  }
}

/**
 * A rewind to after event `toSeq` (a checked branch point): the `branch` event forgetting what
 * the view holds past it, and the calls past it still waiting for their answers (a rollback's:
 * the view shows a call with its answer only, so they are not in it yet, and an answer arriving
 * later must not bring them back), and copies of what the view held there and no longer does.
 */
function rewindDrafts(
  ref: ConversationRef,
  events: readonly Event[],
  toSeq: number,
  reason: string | undefined,
): EventDraft[] {
  const branch = draftEvent({ ...ref, source: 'user' }, 'branch', {
    kind: 'rewind',
    from: { conversation: ref.conversation, seq: toSeq },
    forgotten_event_ids: [],
    copied: 0,
    ...(reason !== undefined ? { reason } : {}),
  });
  const plan = planBranch(buildView(events), buildView(events.filter((event) => event.seq <= toSeq)), ref, {
    renameBatches: branch.id.slice(-12),
  });
  const waiting = unmatchedActions(events).flatMap((action) => (action.seq > toSeq ? [action.id] : []));
  const forgotten = [...new Set([...plan.forgottenEventIds, ...waiting])];
  return [{ ...branch, forgotten_event_ids: forgotten, copied: plan.copies.length }, ...plan.copies];
}

/** The event recording a conversation's spec: the user's choice (through the gateway, which made and checked it). */
function specDraft(ref: ConversationRef, spec: AgentSpec, reason: string, template: string | undefined): EventDraft {
  return draftEvent({ ...ref, source: 'user' }, 'agent_spec', {
    spec,
    reason,
    ...(template !== undefined ? { template } : {}),
  });
}

/** The text of a final response: a message's text parts, or a finish action's message. */
function responseText(event: Event): string | null {
  if (event.type === 'message')
    return event.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n');
  if (event.type === 'action' && typeof event.input?.['message'] === 'string') return event.input['message'];
  return null;
}

function isRunStart(draft: EventDraft): boolean {
  return draft.type === 'state_change' && draft.status === 'running';
}

export function toResource(snapshot: ConversationSnapshot, queue: QueuedRun | null = null): Conversation {
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
    agent: snapshot.agent_spec && {
      model: snapshot.agent_spec.model,
      template: snapshot.agent_spec.template,
      spec_seq: snapshot.agent_spec.seq,
    },
    branch: { forked_from: snapshot.forked_from, abandoned: snapshot.abandoned },
    run_started: snapshot.run_started,
    queue,
  };
}
