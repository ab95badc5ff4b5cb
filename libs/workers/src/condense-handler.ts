import { condenseOrFail, SpecFold, unreadableSpecDrafts } from '@flotilla/agent';
import { withPositionalIds, type Event, type EventDraft } from '@flotilla/events';
import { isConflict, type EventLog } from '@flotilla/log';
import type { CommitHandler, ConversationCache, HandleOutcome, InterruptRegistry } from '@flotilla/runtime';
import { inSpan } from '@flotilla/tracing';
import { isOutcome, isStillTail, loadDelivered, NOT_TAIL } from './at-tail.js';
import { commitSpan } from './commit-span.js';
import { CondensationWatch } from './condensation-watch.js';
import type { ConversationAgents } from './conversation-agents.js';
import { IncrementalFold, incrementalProgress } from './incremental-fold.js';
import { TitleDuty } from './title-duty.js';

const NOTHING_TO_DO: HandleOutcome = Object.freeze({ ack: true, outcome: 'nothing_to_do' });

export type CondenseHandlerDependencies = {
  readonly log: EventLog;
  readonly cache: ConversationCache;
  /** Each conversation's agent (its condenser settings, whether it wants titles, its model), from the spec in its log. */
  readonly agents: ConversationAgents;
  readonly interrupts: InterruptRegistry;
};

/**
 * The condenser's reaction to a delivered commit: answer an unhandled condensation request at the
 * tail; otherwise, where the conversation's spec asks for titles (`titles.generate`), give a
 * conversation owed a title its title (TitleDuty). A condensation comes first: the run waits for
 * it, not for a title.
 */
export function createCondenseHandler(deps: CondenseHandlerDependencies): CommitHandler {
  const progress = incrementalProgress();
  const specs = new IncrementalFold(
    () => new SpecFold(),
    (fold, events) => fold.append(events),
  );
  const agentOf = (events: readonly Event[]) => deps.agents.of(specs.of(events).event());
  const titles = new TitleDuty({
    log: deps.log,
    cache: deps.cache,
    agentOf,
    model: (ref, agent) => deps.agents.model(ref, agent),
    // a step owed, or the workspace context it waits for: a title landing now would make that append conflict
    stepDue: (events) => ['step', 'prepare'].includes(progress.of(events).nextWork().kind),
  });
  // most commits need no history here: the cache is left as it is, and catches up when one does
  const watch = new CondensationWatch({ titles: true });
  return async (delivery) => {
    if (watch.nothingDue(delivery)) return NOTHING_TO_DO;
    const loaded = await loadDelivered(delivery, deps.log, deps.cache);
    if (isOutcome(loaded)) {
      if (loaded.outcome === NOT_TAIL.outcome) watch.holdTitle(delivery);
      return loaded;
    }
    const { ref, tail, conversation } = loaded;
    const owed = progress.of(conversation.events);
    watch.note(ref, tail, owed.condensationRequested, titles.watched(conversation.events));
    if (owed.nextWork().kind !== 'condense') {
      const outcome = await titles.handle(delivery, loaded);
      // a title racing a running conversation's steps: not at every one of its commits
      if (outcome.outcome === 'title_held' || outcome.outcome === NOT_TAIL.outcome) watch.holdTitle(delivery);
      return outcome;
    }
    if (!(await isStillTail(delivery, ref, deps.log, deps.cache.tails))) return NOT_TAIL;
    // the summary's model call and the condensation's commit: one span, the child of the request's commit
    return inSpan('condense', commitSpan(delivery, ref), async () => {
      const lookup = agentOf(conversation.events);
      const tracked = deps.interrupts.track(ref, delivery.signal);
      let drafts: EventDraft[];
      try {
        drafts = lookup.ok
          ? await condenseOrFail(conversation.events, lookup.agent.config, await deps.agents.model(ref, lookup.agent), { ...ref, source: 'agent' }, tracked.signal)
          : unreadableSpecDrafts(ref, lookup.reason);
      } catch (error) {
        // what the summarizer does is answered in the log (condenseOrFail's ladder); what is left is
        // a shutdown, an interrupt, or a failure of this process (the commit is redelivered)
        if (delivery.signal.aborted) throw error;
        if (tracked.signal.aborted) return { ack: true, outcome: 'interrupted' };
        throw error;
      } finally {
        tracked.done();
      }
      try {
        const commit = await deps.log.append(ref, withPositionalIds(drafts, tail.lastSeq + 1), { expected: tail });
        deps.cache.appended(ref, tail, commit.events, { streamSeq: commit.streamSeq, lastSeq: commit.lastSeq });
        return { ack: true, outcome: 'condensed' };
      } catch (error) {
        if (isConflict(error)) return { ack: true, outcome: 'conflict' };
        throw error;
      }
    });
  };
}
