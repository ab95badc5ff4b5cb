import { condenseOrFail, SpecFold, unreadableSpecDrafts } from '@flotilla/agent';
import { withPositionalIds, type Event, type EventDraft } from '@flotilla/events';
import { appendSurely, isConflict, type ConversationRef, type EventLog, type Tail } from '@flotilla/log';
import {
  CondenserWakeupReason,
  parseCondenserWakeup,
  type CommitHandler,
  type ConversationCache,
  type HandleOutcome,
  type InterruptRegistry,
} from '@flotilla/runtime';
import { inSpan } from '@flotilla/tracing';
import { commitSpan } from './commit-span.js';
import type { ConversationAgents } from './conversation-agents.js';
import { IncrementalFold, incrementalProgress } from './incremental-fold.js';
import { TITLE_RETRY_MS, TitleDuty } from './title-duty.js';

const NOTHING_TO_DO: HandleOutcome = Object.freeze({ ack: true, outcome: 'nothing_to_do' });
/** A condensation that met a later commit is decided again from the log at once. */
const CONFLICT_RETRY_MS = 50;

export type CondenseHandlerDependencies = {
  readonly log: EventLog;
  readonly cache: ConversationCache;
  /** Each conversation's agent (its condenser settings, whether it wants titles, its model), from the spec in its log. */
  readonly agents: ConversationAgents;
  readonly interrupts: InterruptRegistry;
};

/**
 * The condenser's reaction to a wake-up (CondenserWakeups, put by a step worker): the
 * conversation it names is read up to its tail, and what is owed there is done. A `condense`
 * wake-up answers an open condensation request; a `title` wake-up gives a conversation owed a
 * title (where its spec asks for titles, `titles.generate`) its title (TitleDuty), after any
 * condensation: the run waits for that, not for a title. A wake-up leaves the queue once its
 * duty is done or no longer owed; one whose duty must wait comes back later. A body that is not a
 * wake-up is reported, and both duties are decided from the log.
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
  });
  return async (delivery) => {
    const { ref } = delivery;
    if (!ref) return { ack: true, outcome: 'foreign_subject' };
    const wakeup = parseCondenserWakeup(delivery.message.data);
    if (!wakeup.ok)
      delivery.logger.warn({ reason: wakeup.reason }, 'a wake-up that is not one: every duty is decided from the log');
    const reason = wakeup.ok ? wakeup.wakeup.reason : undefined;
    const conversation = await deps.cache.load(ref);
    const { tail } = conversation;
    if (progress.of(conversation.events).nextWork().kind !== 'condense') {
      // a condensation answered (here or by another instance), or a conversation that moved on
      if (reason === CondenserWakeupReason.Condense) return NOTHING_TO_DO;
      return await titles.handle(delivery, { ref, tail, conversation });
    }
    // the title waits for the condensation the run waits for (its wake-up comes back)
    if (reason === CondenserWakeupReason.Title)
      return { ack: false, outcome: 'title_after_condensation', delayMs: TITLE_RETRY_MS };
    // the summary's model call and the condensation's commit: one span, the child of the wake-up's trace
    return inSpan('condense', commitSpan(delivery, ref, { 'flotilla.tail_stream_seq': tail.streamSeq }), async () => {
      const lookup = agentOf(conversation.events);
      const tracked = deps.interrupts.track(ref, delivery.signal);
      let drafts: EventDraft[];
      try {
        drafts = lookup.ok
          ? await condenseOrFail(
              conversation.events,
              lookup.agent.config,
              await deps.agents.model(ref, lookup.agent),
              { ...ref, source: 'agent' },
              tracked.signal,
            )
          : unreadableSpecDrafts(ref, lookup.reason);
      } catch (error) {
        // what the summarizer does is answered in the log (condenseOrFail's ladder); what is left is
        // a shutdown, an interrupt (the next run's step wakes this again if it still waits), or a
        // failure of this process (the wake-up is redelivered)
        if (delivery.signal.aborted) throw error;
        if (tracked.signal.aborted) return { ack: true, outcome: 'interrupted' };
        throw error;
      } finally {
        tracked.done();
      }
      return await appendCondensation(deps, { ref, tail }, drafts);
    });
  };
}

async function appendCondensation(
  deps: CondenseHandlerDependencies,
  { ref, tail }: { readonly ref: ConversationRef; readonly tail: Tail },
  drafts: EventDraft[],
): Promise<HandleOutcome> {
  try {
    const commit = await appendSurely(deps.log, ref, withPositionalIds(drafts, tail.lastSeq + 1), { expected: tail });
    deps.cache.appended(ref, tail, commit.events, { streamSeq: commit.streamSeq, lastSeq: commit.lastSeq });
    return { ack: true, outcome: 'condensed' };
  } catch (error) {
    // a commit landed meanwhile (a user's message): decided again from the log
    if (isConflict(error)) return { ack: false, outcome: 'conflict', delayMs: CONFLICT_RETRY_MS };
    throw error;
  }
}
