import { interruptedDrafts, type NextWork } from '@flotilla/agent';
import { draftEvent, withPositionalIds, type Event, type EventDraft } from '@flotilla/events';
import { appendSurely, isConflict, type ConversationRef } from '@flotilla/log';
import type { CachedConversation } from '@flotilla/runtime';
import { incrementalProgress } from './incremental-fold.js';
import { runActions } from './sandbox-actions.js';
import { listMcpServers, prepare } from './step-prerequisites.js';
import type { ToolRunnerContext } from './tool-runner-context.js';
import { conversationKey as key } from './tool-runner-dependencies.js';

/** How long a batch's observations are tried again through transient failures (a nats-server restart, an election) before they are given up (the actions are then answered as interrupted). */
const RESULTS_RETRY_MS = 100_000;
/** Conflicting appends of a batch's observations before they are given up. */
const MAX_RESULT_CONFLICTS = 200;

/**
 * Runs what a conversation's log says is due, one batch at a time and serialised per
 * conversation: each action at most once (execution_started is appended before anything runs),
 * and one commit of observations per batch. What a step waits for first (the workspace read, the
 * hooks run, MCP servers listed) is appended on the way.
 */
export class BatchExecution {
  readonly #context: ToolRunnerContext;
  /** Conversations whose actions this process is executing right now. */
  readonly #executing = new Map<string, Promise<void>>();
  /** What each cached conversation owes, extended as the cache grows (no rescans per delivery). */
  readonly #progress = incrementalProgress();

  constructor(context: ToolRunnerContext) {
    this.#context = context;
  }

  /** Whether this process is running the conversation's batch now. */
  busy(ref: ConversationRef): boolean {
    return this.#executing.has(key(ref));
  }

  /** Settles once the batch running for the conversation (if any) has ended, whether it failed or not. */
  settled(ref: ConversationRef): Promise<void> | undefined {
    return this.#executing.get(key(ref))?.catch(() => undefined);
  }

  /** Settles once every batch running now has ended. */
  allSettled(): Promise<unknown> {
    return Promise.allSettled([...this.#executing.values()]);
  }

  /**
   * nextWork with the liveness of every runner that started an unanswered action. `selfBusy` says
   * whether this process is running the conversation's batch now: if not, our own started and
   * unanswered actions are leftovers of a failed attempt, i.e. interrupted.
   */
  async decide(events: readonly Event[], selfBusy: boolean): Promise<NextWork> {
    const { runnerId, runners } = this.#context.deps;
    const progress = this.#progress.of(events);
    const alive = new Map<string, boolean>();
    for (const runner of progress.startedByRunners()) {
      alive.set(runner, runner === runnerId ? selfBusy : (await runners.aliveUntil(runner)) !== undefined);
    }
    return progress.nextWork({ runnerAlive: (runner) => alive.get(runner) ?? false });
  }

  /** Runs whatever the conversation's log says is due, one batch at a time; serialised per conversation. */
  async executeFor(
    ref: ConversationRef,
    tookOver: boolean,
    signal?: AbortSignal,
    loaded?: CachedConversation,
  ): Promise<void> {
    // Chain after any batch already running here, then look at the log again: work that arrived
    // while it ran is never assumed done.
    const previous = this.#executing.get(key(ref));
    const job = previous
      ? previous.catch(() => undefined).then(() => this.#runBatches(ref, tookOver, signal))
      : this.#runBatches(ref, tookOver, signal, loaded);
    this.#executing.set(key(ref), job);
    try {
      await job;
    } finally {
      if (this.#executing.get(key(ref)) === job) this.#executing.delete(key(ref));
    }
  }

  /**
   * `loaded`: the conversation as the caller just loaded it at the tail (else it is read). After
   * an append of ours the cache holds the log as of that append: a later commit is delivered and
   * handled on its own, and an append that meets one conflicts and reads the log again.
   */
  async #runBatches(
    ref: ConversationRef,
    tookOver: boolean,
    signal?: AbortSignal,
    loaded?: CachedConversation,
  ): Promise<void> {
    const { deps, inForce } = this.#context;
    let note = tookOver;
    let known = loaded;
    for (let round = 0; round < 50; round += 1) {
      if (signal?.aborted) return;
      const conversation = known ?? (await deps.cache.load(ref));
      known = undefined;
      const work = await this.decide(conversation.events, false);
      const owed = inForce.mcpOwed(work, conversation.events);
      if (owed) {
        known = await listMcpServers(this.#context, ref, conversation, owed);
        continue;
      }
      if (work.kind === 'prepare') {
        known = await prepare(this.#context, ref, conversation, work.needs);
        continue;
      }
      if (work.kind !== 'execute') return;
      const context = { ...ref, source: 'system' as const };
      const drafts: EventDraft[] = interruptedDrafts(work.interrupted, context);
      if (work.actions.length > 0) {
        drafts.push(
          draftEvent(context, 'execution_started', {
            action_ids: work.actions.map((action) => action.id),
            runner: deps.runnerId,
          }),
        );
      }
      let started;
      try {
        // an append whose answer was lost is tried again until its outcome is known: thrown here
        // instead, a redelivery would find the start recorded and answer the actions as interrupted,
        // though none of them ran
        started = await appendSurely(deps.log, ref, withPositionalIds(drafts, conversation.tail.lastSeq + 1), {
          expected: conversation.tail,
        });
      } catch (error) {
        if (isConflict(error)) continue;
        throw error;
      }
      deps.cache.appended(ref, conversation.tail, started.events, {
        streamSeq: started.streamSeq,
        lastSeq: started.lastSeq,
      });
      known = deps.cache.peek(ref);
      if (known?.tail.streamSeq !== started.streamSeq) known = undefined;
      if (work.actions.length === 0) continue;
      const observations = await runActions(
        this.#context,
        ref,
        work.actions,
        note,
        inForce.inForce(conversation.events, ref),
      );
      note = false;
      known = await this.#appendResults(ref, observations);
    }
  }

  /**
   * Observations must land: a transient failure appends the same commit again (appendSurely), so a
   * lost answer never duplicates it; on a conflict, append again at the new tail. Results for calls
   * that got answered meanwhile (e.g. marked interrupted by a runner that thought we were dead) are
   * dropped, so no call is ever answered twice.
   */
  async #appendResults(ref: ConversationRef, drafts: readonly EventDraft[]): Promise<CachedConversation | undefined> {
    const { deps } = this.#context;
    let remaining = drafts;
    const deadline = Date.now() + RESULTS_RETRY_MS;
    for (let conflicts = 0; ; conflicts += 1) {
      // first at the tail our execution_started left (the usual case), then as the log says
      const conversation = (conflicts === 0 ? deps.cache.peek(ref) : undefined) ?? (await deps.cache.load(ref));
      const progress = this.#progress.of(conversation.events);
      const unanswered = remaining.filter(
        (draft) => draft.type !== 'observation' || !progress.answered(draft.tool_call_id),
      );
      if (unanswered.length === 0) return undefined;
      if (unanswered.length !== remaining.length) {
        deps.logger.warn(
          { dropped: remaining.length - unanswered.length },
          'results already answered by another runner were dropped',
        );
        remaining = unanswered;
      }
      try {
        const commit = await appendSurely(deps.log, ref, withPositionalIds(remaining, conversation.tail.lastSeq + 1), {
          expected: conversation.tail,
          deadline,
        });
        deps.cache.appended(ref, conversation.tail, commit.events, {
          streamSeq: commit.streamSeq,
          lastSeq: commit.lastSeq,
        });
        deps.metrics.appends.inc({ result: 'ok' });
        const known = deps.cache.peek(ref);
        return known?.tail.streamSeq === commit.streamSeq ? known : undefined;
      } catch (error) {
        if (!isConflict(error) || conflicts >= MAX_RESULT_CONFLICTS) throw error;
        deps.metrics.appends.inc({ result: 'conflict' });
        await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(5 * (conflicts + 1), 50)));
      }
    }
  }
}
