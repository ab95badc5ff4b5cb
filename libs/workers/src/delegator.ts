import {
  answerDrafts,
  childConversationId,
  childDrafts,
  DelegationFold,
  planDelegations,
  readAgentSpec,
  SpecFold,
  startedDrafts,
  steerChild,
  TaskInput,
  type ChildState,
} from '@flotilla/agent';
import { withPositionalIds, type EventDraft } from '@flotilla/events';
import { appendSurely, EMPTY_TAIL, isConflict, type ConversationRef, type EventLog } from '@flotilla/log';
import {
  publishInterrupt,
  type CachedConversation,
  type CommitHandler,
  type ConversationCache,
  type Logger,
  type ServiceMetrics,
} from '@flotilla/runtime';
import type { NatsConnection } from '@nats-io/transport-node';
import { isOutcome, loadDelivered } from './at-tail.js';
import { DelegationWatch } from './delegation-watch.js';
import { IncrementalFold, incrementalProgress } from './incremental-fold.js';

export type DelegatorDependencies = {
  readonly log: EventLog;
  /** Whole logs (no checkpoints): the folds here read every event. */
  readonly cache: ConversationCache;
  /** Publishes the interrupts a parent's interrupt owes its children. */
  readonly nc: NatsConnection;
  readonly metrics: ServiceMetrics;
};

const NOTHING_DELEGATED = Object.freeze({ ack: true as const, outcome: 'nothing_delegated' });

/** Rounds of deciding again after a conflict, within one delivery, before the next commit is left to decide. */
const MAX_ROUNDS = 20;

/**
 * The delegator: starts the children of a conversation's `task` calls and answers the calls with
 * their final responses, holding nothing while they work. Every commit wakes it; from the log, it
 * decides for the conversation as a parent (its pending calls) and for its parent when it is a
 * child: start the children that are due (each made, then recorded with `subagent_started`), keep
 * each child's run where its parent's is (paused, interrupted, resumed), and once every child the
 * parent waits for is done, append all the answers in one commit. Each decision is made again from
 * the logs after any conflict or crash, and each child's id is derived from its call, so nothing
 * is started twice or answered twice.
 */
export class Delegator {
  readonly #deps: DelegatorDependencies;
  readonly #progress = incrementalProgress();
  readonly #delegations = new IncrementalFold(
    () => new DelegationFold(),
    (fold, events) => fold.append(events),
  );
  readonly #specs = new IncrementalFold(
    () => new SpecFold(),
    (fold, events) => fold.append(events),
  );
  /** Which conversations are in a delegation, from the headers of the commits seen: most commits owe nothing and are not loaded. */
  readonly #watch = new DelegationWatch();
  /** One settling of a parent at a time in this process (its children's commits arrive together). */
  readonly #settling = new Map<string, Promise<string>>();

  constructor(deps: DelegatorDependencies) {
    this.#deps = deps;
  }

  handler(): CommitHandler {
    return async (delivery) => {
      if (this.#watch.nothingDue(delivery)) return NOTHING_DELEGATED;
      const loaded = await loadDelivered(delivery, this.#deps.log, this.#deps.cache);
      if (isOutcome(loaded)) return loaded;
      const { ref, conversation } = loaded;
      const parents: ConversationRef[] = [];
      if (this.#progress.of(conversation.events).delegations().length > 0) parents.push(ref);
      const task = this.#delegations.of(conversation.events).task;
      if (task) parents.push({ tenant: ref.tenant, conversation: task.parent_call.conversation });
      this.#watch.note(ref, loaded.tail, parents.length > 0);
      if (parents.length === 0) return NOTHING_DELEGATED;
      let outcome = '';
      for (const parent of parents) outcome = await this.settle(parent, delivery.logger);
      return { ack: true, outcome };
    };
  }

  /** Decides, from the logs, what a parent's pending task calls owe now, and does it. Returns what it came to. */
  settle(parent: ConversationRef, logger: Logger): Promise<string> {
    const key = `${parent.tenant}.${parent.conversation}`;
    const previous = this.#settling.get(key);
    const run = (previous ? previous.catch(() => '') : Promise.resolve('')).then(() => this.#settle(parent, logger));
    this.#settling.set(key, run);
    return run.finally(() => {
      if (this.#settling.get(key) === run) this.#settling.delete(key);
    });
  }

  async #settle(ref: ConversationRef, logger: Logger): Promise<string> {
    for (let round = 0; round < MAX_ROUNDS; round += 1) {
      const parent = await this.#deps.cache.load(ref);
      if (parent.tail.lastSeq === 0) return 'parent_gone';
      const progress = this.#progress.of(parent.events);
      const pending = progress.delegations();
      if (pending.length === 0) return 'nothing_owed';
      const fold = this.#delegations.of(parent.events);
      const children = await Promise.all(
        pending.map(async ({ action, child }) => {
          const id = child ?? childConversationId(ref, action.id);
          const agent = fold.child(action.id)?.started.agent ?? agentNamed(action.input);
          return {
            action,
            agent,
            child: id,
            started: child !== null,
            state: await this.#childState({ tenant: ref.tenant, conversation: id }),
          };
        }),
      );

      const work = progress.nextWork();
      if (work.kind === 'delegate') {
        const event = this.#specs.of(parent.events).event();
        const spec = event === undefined ? undefined : readAgentSpec(event);
        const plan = planDelegations({
          ref,
          actions: work.actions,
          spec,
          depth: fold.depth,
          atWork: children.filter((child) => child.started).length,
        });
        // each child is made before it is recorded: a delegator that dies between the two makes the same child again, which is there
        // (a plan accepts calls only under a readable spec)
        const parentSpec = spec?.ok ? spec.spec : undefined;
        for (const accepted of parentSpec ? plan.accepted : []) {
          if (children.find((child) => child.action.id === accepted.action.id)?.state.exists) continue;
          const drafts = childDrafts({
            parent: ref,
            parentSpec: parentSpec!,
            parentDepth: fold.depth,
            parentWorkspace: fold.workspace(ref.conversation),
            delegation: accepted,
          });
          await this.#create({ tenant: ref.tenant, conversation: accepted.child }, drafts);
        }
        const drafts = [...startedDrafts(ref, plan.accepted), ...plan.refused];
        if (await this.#appendAt(ref, parent, drafts)) {
          logger.info(
            { started: plan.accepted.map((accepted) => accepted.child), refused: plan.refused.length },
            'sub-agents started',
          );
        }
        continue;
      }

      // while the parent waits, each child's run follows its parent's
      let steered = false;
      for (const child of children) {
        if (
          await this.#steer(
            { tenant: ref.tenant, conversation: child.child },
            { status: progress.state.status, stoppedBy: fold.stoppedBy },
            child.state,
          )
        )
          steered = true;
      }
      if (steered) continue;

      // every call started, every child done: all the answers, in one commit
      if (children.every((child) => child.started)) {
        const answers = answerDrafts(ref, children);
        if (answers) {
          if (await this.#appendAt(ref, parent, answers))
            logger.info({ answered: children.length }, 'sub-agents answered');
          continue;
        }
      }
      return 'waiting';
    }
    return 'undecided';
  }

  /** A child as its log says: not there (never made, or deleted), or where its run stands. */
  async #childState(ref: ConversationRef): Promise<ChildState> {
    return this.#stateOf(await this.#deps.cache.load(ref));
  }

  #stateOf(child: CachedConversation): ChildState {
    if (child.tail.lastSeq === 0) return { exists: false };
    const fold = this.#delegations.of(child.events);
    return { exists: true, status: fold.status, stoppedBy: fold.stoppedBy, answer: fold.answer, error: fold.error };
  }

  /** A child's first commit, expecting an empty log: one that is there already (made before a crash) is left as it is. */
  async #create(ref: ConversationRef, drafts: readonly EventDraft[]): Promise<void> {
    try {
      const commit = await appendSurely(this.#deps.log, ref, withPositionalIds(drafts, 1), { expected: EMPTY_TAIL });
      this.#deps.metrics.appends.inc({ result: 'ok' });
      this.#deps.cache.appended(ref, EMPTY_TAIL, commit.events, {
        streamSeq: commit.streamSeq,
        lastSeq: commit.lastSeq,
      });
    } catch (error) {
      if (!isConflict(error)) throw error;
      this.#deps.metrics.appends.inc({ result: 'conflict' });
    }
  }

  /** Moves a child's run where its parent's is, deciding again on a conflict; true when it appended. */
  async #steer(ref: ConversationRef, parent: Parameters<typeof steerChild>[1], known: ChildState): Promise<boolean> {
    if (!steerChild(ref, parent, known)) return false;
    for (let attempt = 0; attempt < MAX_ROUNDS; attempt += 1) {
      const child = await this.#deps.cache.load(ref);
      const steering = steerChild(ref, parent, this.#stateOf(child));
      if (!steering) return false;
      if (await this.#appendAt(ref, child, steering.drafts)) {
        // whoever holds the child's model call or tool drops it now
        if (steering.interrupt) publishInterrupt(this.#deps.nc, ref);
        return true;
      }
    }
    return false;
  }

  /** Appends at the tail `conversation` was read at; false on a conflict (another commit landed first). */
  async #appendAt(
    ref: ConversationRef,
    conversation: CachedConversation,
    drafts: readonly EventDraft[],
  ): Promise<boolean> {
    if (drafts.length === 0) return false;
    try {
      const commit = await appendSurely(this.#deps.log, ref, withPositionalIds(drafts, conversation.tail.lastSeq + 1), {
        expected: conversation.tail,
      });
      this.#deps.cache.appended(ref, conversation.tail, commit.events, {
        streamSeq: commit.streamSeq,
        lastSeq: commit.lastSeq,
      });
      this.#deps.metrics.appends.inc({ result: 'ok' });
      return true;
    } catch (error) {
      if (!isConflict(error)) throw error;
      this.#deps.metrics.appends.inc({ result: 'conflict' });
      return false;
    }
  }
}

/** The sub-agent a task call names, for a call whose child was never recorded. */
function agentNamed(input: Record<string, unknown> | null): string {
  const parsed = TaskInput.safeParse(input);
  return parsed.success ? parsed.data.agent : 'unknown';
}
