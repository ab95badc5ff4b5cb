import {
  ConversationProgress,
  finishDrafts,
  messageCharacters,
  RunStateFold,
  SkillsFold,
  SpecFold,
  step,
  stepStandsAfter,
  unreadableSpecDrafts,
  StepOutcome,
  stepNeverDueAfter,
  type ConversationCheckpoint,
} from '@flotilla/agent';
import { draftEvent, withPositionalIds, type EventDraft } from '@flotilla/events';
import { appendSurely, isConflict, LogError, LogErrorCode, type EventLog } from '@flotilla/log';
import {
  DeltaCoalescer,
  publishDelta,
  type CommitHandler,
  type ConversationStart,
  type Delivery,
  type HandleOutcome,
  type ConversationCache,
  type InterruptRegistry,
  type ServiceMetrics,
  type TenantBudgetGuard,
  type Usage,
} from '@flotilla/runtime';
import { inSpan, TRACEPARENT_HEADER, type Span } from '@flotilla/tracing';
import { ChatRenderer, ViewBuilder } from '@flotilla/view';
import type { NatsConnection } from '@nats-io/transport-node';
import { isOutcome, isStillTail, loadDelivered, NOT_TAIL, type Delivered } from './at-tail.js';
import { commitSpan } from './commit-span.js';
import type { CondensationWaits } from './condensation-waits.js';
import { CondenserWaker, type CondenserWakeupSink } from './condenser-waker.js';
import type { ConversationAgents } from './conversation-agents.js';
import { IncrementalFold } from './incremental-fold.js';

const NO_STEP_DUE: HandleOutcome = Object.freeze({ ack: true, outcome: 'no_step_due' });
const WAITING_FOR_MCP: HandleOutcome = Object.freeze({ ack: true, outcome: 'waiting_for_mcp_tools' });

export type StepHandlerDependencies = {
  readonly log: EventLog;
  /** With view checkpoints (ConversationCacheOptions.checkpoints), a cold load reads only the log after a conversation's last one. */
  readonly cache: ConversationCache<ConversationCheckpoint>;
  /** Each conversation's agent (settings, tools, model), from the spec in its log. */
  readonly agents: ConversationAgents;
  readonly interrupts: InterruptRegistry;
  readonly nc: NatsConnection;
  readonly metrics: ServiceMetrics;
  /** The tenants' budgets (FLOTILLA_TENANT_BUDGETS): a step of a tenant past its budget stops the run instead, saying why; each appended step's usage is counted. */
  readonly budgets?: TenantBudgetGuard;
  /** Publish token deltas on core NATS for live viewers (merged over up to 30 ms). Default true. */
  readonly streamDeltas?: boolean;
  /** Told which conversations wait for a condensation, so a wait nobody answers gets noticed. */
  readonly condensationWaits?: CondensationWaits;
  /**
   * The condenser's queue: woken for a conversation waiting for a condensation or owed a title
   * (CondenserWaker), before the commit that showed it is acknowledged. Without one, no condenser
   * hears of either (tests of the step alone).
   */
  readonly condenser?: CondenserWakeupSink;
};

/**
 * The step worker's reaction to a delivered commit: if the log up to it says a step is due and
 * it is still the conversation's tail, take ONE step and append its events expecting that tail.
 */
export function createStepHandler(deps: StepHandlerDependencies): CommitHandler {
  // kept beside the cached events, so neither a decision nor a step's view rescans the history;
  // a conversation loaded from its checkpoint resumes them from it
  type Start = ConversationStart<ConversationCheckpoint> | undefined;
  const progress = new IncrementalFold(
    (start: Start) => (start ? ConversationProgress.resume(start.state.progress) : new ConversationProgress()),
    (fold, events) => fold.append(events),
  );
  const views = new IncrementalFold(
    (start: Start) => (start ? ViewBuilder.resume(start.state.view) : new ViewBuilder()),
    (builder, events) => builder.append(events),
  );
  const runStates = new IncrementalFold(
    (start: Start) => (start ? RunStateFold.resume(start.state.run, start.folded) : new RunStateFold()),
    (fold, events) => fold.append(events),
  );
  const specs = new IncrementalFold(
    (start: Start) => SpecFold.resume(start?.state.spec, start?.state.mcp_tools),
    (fold, events) => fold.append(events),
  );
  const skills = new IncrementalFold(
    (start: Start) => SkillsFold.resume(start?.state.skills),
    (fold, events) => fold.append(events),
  );
  // renders what each step's view added; it follows the views itself, so events need not reach it
  const renderers = new IncrementalFold(
    () => new ChatRenderer(messageCharacters),
    () => undefined,
  );
  const waker = deps.condenser
    ? new CondenserWaker<ConversationCheckpoint>({
        wakeups: deps.condenser,
        wantsTitles: (events, start) => {
          const spec = specs.of(events, start);
          const lookup = deps.agents.of(spec.event(), spec.listed());
          return lookup.ok && lookup.agent.config.titles.generate;
        },
      })
    : undefined;
  return async (delivery) => {
    const loaded = await loadDelivered(delivery, deps.log, deps.cache, (commit) =>
      // a commit of actions or execution starts never leaves a step due: no need to read the log for it
      stepNeverDueAfter(commit.eventTypes()) ? NO_STEP_DUE : undefined,
    );
    if (isOutcome(loaded)) return loaded;
    const { ref, tail, conversation } = loaded;
    const { events, start } = conversation;
    const work = progress.of(events, start).nextWork();
    if (work.kind === 'condense') deps.condensationWaits?.waiting(ref, tail.streamSeq);
    else deps.condensationWaits?.settled(ref);
    await waker?.decided(ref, tail, events, start, work, () => delivery.header(TRACEPARENT_HEADER));
    if (work.kind !== 'step' && work.kind !== 'finish') {
      // At rest, a conversation is woken next by a user, usually much later: keep the cache for running ones.
      if (work.kind === 'rest') deps.cache.forget(ref);
      return NO_STEP_DUE;
    }
    if (!(await isStillTail(delivery, ref, deps.log, deps.cache.tails, tail.streamSeq))) return NOT_TAIL;
    const takeStep = async (): Promise<HandleOutcome> => {
      if (work.kind === 'finish')
        return await appendStep(deps, delivery, loaded, finishDrafts(ref), StepOutcome.Finished);
      const spec = specs.of(events, start);
      const lookup = deps.agents.of(spec.event(), spec.listed());
      if (!lookup.ok)
        return await appendStep(deps, delivery, loaded, unreadableSpecDrafts(ref, lookup.reason), StepOutcome.Error);
      const { agent } = lookup;
      const overBudget = await deps.budgets?.reached(ref.tenant);
      if (overBudget)
        return await appendStep(deps, delivery, loaded, budgetStopDrafts(ref, overBudget), StepOutcome.Error);
      // the tool runner lists the spec's MCP servers at its first commit; that commit wakes the step (docs/architecture.md, "MCP servers")
      if (agent.unlisted.length > 0) return WAITING_FOR_MCP;

      const tracked = deps.interrupts.track(ref, delivery.signal, tail.streamSeq);
      const deltas =
        deps.streamDeltas === false ? undefined : new DeltaCoalescer((delta) => publishDelta(deps.nc, ref, delta));
      const started = performance.now();
      let result;
      try {
        result = await step({
          agent: agent.config,
          llm: await deps.agents.model(ref, agent),
          tools: agent.tools,
          // from a checkpoint, the events begin a little before it: what the step's backward looks read
          events,
          view: () => views.of(events, start).view(),
          runState: () => runStates.of(events, start).state(),
          skills: () => skills.of(events, start),
          chat: renderers.of(events),
          conversation: ref,
          signal: tracked.signal,
          ...(deltas ? { onDelta: (delta) => deltas.push(delta) } : {}),
        });
      } catch (error) {
        deltas?.flush();
        if (delivery.signal.aborted) throw error; // shutdown: the commit goes back to the group
        if (tracked.signal.aborted) return { ack: true, outcome: 'interrupted' };
        throw error;
      } finally {
        tracked.done();
        deps.metrics.llmSeconds.observe({ outcome: 'step' }, (performance.now() - started) / 1_000);
      }
      if (tracked.signal.aborted) {
        deltas?.flush();
        return { ack: true, outcome: 'interrupted' };
      }
      // the call's last deltas go out in the step's commit's write (one system call, one wake-up of
      // nats-server, instead of two); if no commit is published, they go out on their own after it
      try {
        return await appendStep(deps, delivery, loaded, result.drafts, result.outcome, deltas);
      } finally {
        deltas?.flush();
      }
    };
    // the step, its model call and its commit: one span, the child of the commit it reacts to
    return inSpan('step', commitSpan(delivery, ref), async (span) => withOutcome(span, await takeStep()));
  };
}

function withOutcome(span: Span | undefined, outcome: HandleOutcome): HandleOutcome {
  span?.setAttribute('flotilla.outcome', outcome.outcome);
  return outcome;
}

/**
 * Appends a step's commit at the tail it was decided on. A conflict means another writer got there
 * first (its commit wakes the group again), unless what landed meanwhile leaves the step standing
 * (`stepStandsAfter`: a title, or a pause): the step is then appended after it as it is. A reply
 * too large to store ends the run instead, saying why.
 */
async function appendStep(
  deps: StepHandlerDependencies,
  delivery: Delivery,
  { ref, tail: decidedAt }: Delivered<ConversationCheckpoint>,
  decided: readonly EventDraft[],
  decidedOutcome: string,
  /** Token deltas still pending, sent right before the commit. */
  deltas?: DeltaCoalescer,
): Promise<HandleOutcome> {
  let drafts = decided;
  let outcome = decidedOutcome;
  let tail = decidedAt;
  for (;;) {
    try {
      const commit = await appendSurely(deps.log, ref, withPositionalIds(drafts, tail.lastSeq + 1), {
        expected: tail,
        signal: delivery.signal,
        ...(deltas ? { beforePublish: () => deltas.flush() } : {}),
      });
      deps.cache.appended(ref, tail, commit.events, { streamSeq: commit.streamSeq, lastSeq: commit.lastSeq });
      deps.metrics.appends.inc({ result: 'ok' });
      deps.budgets?.spent(ref.tenant, stepUsage(drafts));
      delivery.logger.debug({ outcome, seq: commit.lastSeq }, 'step appended');
      return { ack: true, outcome };
    } catch (error) {
      if (isConflict(error)) {
        const moved = await deps.cache.load(ref);
        if (stepStandsAfter(moved.events.filter((event) => event.seq > tail.lastSeq))) {
          deps.metrics.appends.inc({ result: 'rebased' });
          tail = moved.tail;
          continue;
        }
        deps.metrics.appends.inc({ result: 'conflict' });
        return { ack: true, outcome: 'conflict' };
      }
      // a reply too large to store would be retried forever: the run ends, saying why
      if (!(error instanceof LogError) || error.code !== LogErrorCode.TooLarge || outcome === 'too_large') throw error;
      const system = { ...ref, source: 'system' as const };
      drafts = [
        draftEvent(system, 'conversation_error', {
          code: 'reply_too_large',
          detail: `The model's reply could not be stored: ${error.message}.`,
        }),
        draftEvent(system, 'state_change', { status: 'error', reason: "the model's reply was too large to store" }),
      ];
      outcome = 'too_large';
    }
  }
}

/** The run stops: its tenant reached a budget (the step is not taken; the conversation rests in error, saying why). */
function budgetStopDrafts(
  ref: { readonly tenant: string; readonly conversation: string },
  detail: string,
): EventDraft[] {
  const system = { ...ref, source: 'system' as const };
  return [
    draftEvent(system, 'conversation_error', {
      code: 'tenant_budget_reached',
      detail: `${detail}: runs start again when the budget's period ends (UTC) or the operator raises it.`,
    }),
    draftEvent(system, 'state_change', { status: 'error', reason: detail }),
  ];
}

/** What a step's model calls spent: `cost_usd`, and prompt + completion tokens. */
function stepUsage(drafts: readonly EventDraft[]): Usage {
  let usd = 0;
  let tokens = 0;
  for (const draft of drafts) {
    if (draft.type !== 'llm_usage') continue;
    usd += draft.cost_usd;
    tokens += draft.prompt_tokens + draft.completion_tokens;
  }
  return { usd, tokens };
}
