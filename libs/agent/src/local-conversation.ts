import {
  draftEvent,
  withPositionalIds,
  type ConversationStatus,
  type DraftContext,
  type Event,
  type EventDraft,
} from '@flotilla/events';
import type { LanguageModel, StreamDelta } from '@flotilla/llm';
import { appendSurely, isConflict, type ConversationRef, type EventLog, type Tail, EMPTY_TAIL } from '@flotilla/log';
import { createToolContext, type ToolRegistry, type Workspace } from '@flotilla/tools';
import type { AgentConfig } from './agent-config.js';
import { specOfConfig } from './agent-spec.js';
import { messageCommand, pauseCommand, rejectCommand, runCommand } from './commands.js';
import { condenseOrFail } from './condense-or-fail.js';
import { executeActions, interruptedDrafts } from './execute-actions.js';
import { finishDrafts } from './finish.js';
import { actionPaths, withPathRules, workspaceRelative } from './path-rules.js';
import { ConversationProgress } from './progress.js';
import { SkillsFold } from './skills-fold.js';
import { step } from './step.js';
import { registryCatalog, type ToolCatalog } from './tool-catalog.js';
import { readWorkspaceContext } from './workspace-context.js';
import { failedHook } from './hook-outcome.js';
import { HooksConfig } from './hooks-config.js';
import { prepareDrafts } from './prepare-answer.js';
import { lastSpecEvent } from './spec-fold.js';

export type Condenser = (events: readonly Event[], context: DraftContext) => Promise<readonly EventDraft[]>;

export type LocalConversationOptions = {
  readonly log: EventLog;
  readonly ref: ConversationRef;
  readonly agent: AgentConfig;
  readonly llm: LanguageModel;
  readonly tools: ToolRegistry;
  readonly workspace: Workspace;
  /** Replaces the summarizing condenser (agent.condenser settings, the agent's model). */
  readonly condenser?: Condenser;
  /** Name recorded in execution_started events. */
  readonly runner?: string;
  readonly now?: () => Date;
};

export type RunOptions = { readonly signal?: AbortSignal; readonly onDelta?: (delta: StreamDelta) => void };

/**
 * A conversation run in this process against the JetStream log: the same step, the same
 * tools and the same decisions (`nextWork`) the distributed services use, in one loop. The
 * log stays the source of truth: every decision is made from it and every append names the
 * tail it read, so another writer (a gateway, a second process) is never overwritten.
 */
export class LocalConversation {
  readonly #options: LocalConversationOptions;
  readonly #catalog: ToolCatalog;
  #events: Event[] = [];
  /** The same fold the snapshot keeps (status, pending actions), over `#events`: commands and `nextWork` decide from it. */
  #progress = new ConversationProgress();
  #tail: Tail = EMPTY_TAIL;

  constructor(options: LocalConversationOptions) {
    this.#options = options;
    this.#catalog = registryCatalog(options.tools, options.agent.tools);
  }

  get ref(): ConversationRef {
    return this.#options.ref;
  }

  async events(): Promise<readonly Event[]> {
    await this.#sync();
    return this.#events;
  }

  async status(): Promise<ConversationStatus> {
    await this.#sync();
    return this.#progress.state.status;
  }

  /** Appends a user message; a finished or stuck conversation goes back to idle, and `run` starts it. */
  async sendMessage(text: string, options: { readonly run?: boolean } = {}): Promise<void> {
    await this.#commit((_events, progress) => messageCommand(progress.state, this.#command(), text, options));
  }

  /** Pauses after the current step. Idempotent; never overrides waiting_for_confirmation. */
  async pause(reason?: string): Promise<void> {
    await this.#commit((_events, progress) => pauseCommand(progress.state, this.#command(), reason));
  }

  /** Rejects the actions awaiting confirmation; the conversation goes idle. */
  async reject(reason: string): Promise<void> {
    await this.#commit((_events, progress) => rejectCommand(progress.state, this.#command(), reason));
  }

  /**
   * Runs until the conversation comes to rest, and returns the status it rests in. On
   * waiting_for_confirmation this approves the pending actions; on running it resumes.
   */
  async run(options: RunOptions = {}): Promise<ConversationStatus> {
    // how its steps are made is in its log (DESIGN invariant 14): the agent's spec, when the log's is another
    await this.#commit((events) => {
      const spec = specOfConfig(this.#options.agent);
      return JSON.stringify(lastSpecEvent(events)?.spec) === JSON.stringify(spec)
        ? []
        : [draftEvent(this.#context('user'), 'agent_spec', { spec, reason: 'the agent this process runs' })];
    });
    await this.#commit((_events, progress) => runCommand(progress.state, this.#command(), { resume: true }));
    for (;;) {
      options.signal?.throwIfAborted();
      await this.#sync();
      const work = this.#progress.nextWork();
      switch (work.kind) {
        case 'rest':
          return this.#progress.state.status;
        case 'execute':
        case 'in_progress':
          await this.#execute();
          break;
        case 'condense':
          await this.#condense();
          break;
        case 'prepare':
          await this.#prepare();
          break;
        case 'finish':
          await this.#appendAt(this.#tail, finishDrafts(this.#options.ref));
          break;
        case 'delegate':
          await this.#refuseDelegations();
          break;
        case 'delegated':
          // children started by the services' delegator answer these calls; this process does not wait for them
          return this.#progress.state.status;
        case 'step':
          await this.#step(options);
          break;
      }
    }
  }

  async #step(options: RunOptions): Promise<void> {
    const events = this.#events;
    const tail = this.#tail;
    const result = await step({
      agent: this.#options.agent,
      llm: this.#options.llm,
      tools: this.#catalog,
      events,
      conversation: this.#options.ref,
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.onDelta ? { onDelta: options.onDelta } : {}),
      ...(this.#options.now ? { now: this.#options.now } : {}),
    });
    await this.#appendAt(tail, result.drafts);
  }

  async #execute(): Promise<void> {
    const runner = this.#options.runner ?? `local-${process.pid}`;
    // Record the start first: if this process dies mid-action, the action is reported as interrupted, never re-run.
    const started = await this.#commit((_events, progress) => {
      const work = progress.nextWork();
      if (work.kind !== 'execute') return null;
      const drafts = interruptedDrafts(work.interrupted, this.#context('environment'));
      if (work.actions.length > 0) {
        drafts.push(
          draftEvent(this.#context('system'), 'execution_started', {
            action_ids: work.actions.map((action) => action.id),
            runner,
          }),
        );
      }
      return drafts;
    });
    if (!started) return;
    const startedIds = new Set(
      started.flatMap((event) => (event.type === 'execution_started' ? event.action_ids : [])),
    );
    const actions = this.#progress.pending().started.filter((action) => startedIds.has(action.id));
    if (actions.length === 0) return;
    const toolContext = createToolContext({
      workspace: this.#options.workspace,
      conversationId: this.#options.ref.conversation,
    });
    const executed = await executeActions(actions, this.#options.tools, toolContext, this.#context('environment'));
    const { workspace } = this.#options;
    const roots = [workspace.shownRoot, workspace.root];
    const observations = withPathRules(actions, executed, SkillsFold.of(this.#events), (action) =>
      actionPaths(action).flatMap((path) => workspaceRelative(path, roots) ?? []),
    );
    await this.#commit(() => observations, { retryWithSameDrafts: true });
  }

  /**
   * What a tool runner owes besides actions, answered here: the workspace's context, read from this
   * conversation's workspace as a tool runner reads it; hooks are not run in this process (it has no
   * sandbox to run them in): each owed one is recorded as not run, so the run goes on.
   */
  async #prepare(): Promise<void> {
    await this.#commit(async (events, progress) => {
      const work = progress.nextWork();
      if (work.kind !== 'prepare') return null;
      const hooks = HooksConfig.safeParse(lastSpecEvent(events)?.spec['hooks'] ?? {});
      return await prepareDrafts({
        needs: work.needs,
        events,
        hooks: hooks.success ? hooks.data : HooksConfig.parse({}),
        ref: this.#options.ref,
        readContext: () => readWorkspaceContext(this.#options.workspace),
        run: () =>
          Promise.resolve(failedHook('not run: an in-process conversation runs no hooks (it has no sandbox for them)')),
        ...(this.#options.now ? { now: this.#options.now } : {}),
      });
    });
  }

  /** Sub-agents run on the services (their delegator starts child conversations): here a `task` call is answered with an error the model reads. */
  async #refuseDelegations(): Promise<void> {
    await this.#commit((_events, progress) => {
      const work = progress.nextWork();
      if (work.kind !== 'delegate') return null;
      return work.actions.map((action) =>
        draftEvent({ ...this.#context('environment'), parent: action.id }, 'agent_error', {
          tool_call_id: action.tool_call_id,
          tool_name: action.tool_name,
          action_id: action.id,
          error:
            'Sub-agents cannot be started here: an in-process conversation has no delegator to run them. Do the task yourself.',
        }),
      );
    });
  }

  async #condense(): Promise<void> {
    await this.#commit(async (events, progress) => {
      if (progress.nextWork().kind !== 'condense') return null;
      const custom = this.#options.condenser;
      if (custom) return await custom(events, this.#context('agent'));
      return await condenseOrFail(events, this.#options.agent, this.#options.llm, this.#context('agent'));
    });
  }

  /**
   * Append drafts decided from the current cache, expecting the tail they were decided at; on a
   * conflict, re-sync and re-decide.
   */
  async #commit(
    decide: (
      events: readonly Event[],
      progress: ConversationProgress,
    ) => Promise<readonly EventDraft[] | null> | readonly EventDraft[] | null,
    options: { readonly retryWithSameDrafts?: boolean } = {},
  ): Promise<readonly Event[] | null> {
    for (let attempt = 0; attempt < 100; attempt += 1) {
      await this.#sync();
      const tail = this.#tail;
      const drafts = await decide(this.#events, this.#progress);
      if (!drafts || drafts.length === 0) return null;
      try {
        return await this.#appendAt(tail, drafts);
      } catch (error) {
        if (!isConflict(error)) throw error;
        if (!options.retryWithSameDrafts) continue;
      }
    }
    throw new Error(`could not append to ${this.#options.ref.conversation}: too many conflicting writers`);
  }

  /** Appends `drafts` (with positional ids for that tail) expecting `tail`. */
  async #appendAt(tail: Tail, drafts: readonly EventDraft[]): Promise<readonly Event[]> {
    if (drafts.length === 0) return [];
    const commit = await appendSurely(
      this.#options.log,
      this.#options.ref,
      withPositionalIds(drafts, tail.lastSeq + 1),
      { expected: tail },
    );
    // the commit directly follows `tail`: it extends the cache only if the cache is still there
    if (tail.streamSeq === this.#tail.streamSeq)
      this.#merge(commit.events, { streamSeq: commit.streamSeq, lastSeq: commit.lastSeq });
    return commit.events;
  }

  /**
   * Catches the cache up to the log's tail: reads exactly the commits between the cached tail and
   * the one just fetched (never past it, so a commit another writer appends meanwhile is read by
   * the next sync, once), and merges only what the cache does not hold yet (a concurrent sync or
   * append may have added some while this one read).
   */
  async #sync(): Promise<void> {
    const from = this.#tail;
    const latest = await this.#options.log.tail(this.#options.ref);
    if (latest.streamSeq <= from.streamSeq) return;
    const { events } = await this.#options.log.readEvents(this.#options.ref, {
      afterSeq: from.lastSeq,
      ...(from.streamSeq > 0 ? { afterStreamSeq: from.streamSeq } : {}),
      until: latest,
    });
    this.#merge(events, latest);
  }

  /** Adds the events after the cached tail, up to `tail` (contiguous from an earlier cached tail). */
  #merge(events: readonly Event[], tail: Tail): void {
    if (tail.streamSeq <= this.#tail.streamSeq) return;
    const last = this.#tail.lastSeq;
    const added = events.filter((event) => event.seq > last);
    for (const event of added) this.#events.push(event);
    this.#progress.append(added);
    this.#tail = tail;
  }

  #context(source: DraftContext['source']): DraftContext {
    return { ...this.#options.ref, source, ...(this.#options.now ? { now: this.#options.now } : {}) };
  }

  #command(): { tenant: string; conversation: string; now?: () => Date } {
    return { ...this.#options.ref, ...(this.#options.now ? { now: this.#options.now } : {}) };
  }
}
