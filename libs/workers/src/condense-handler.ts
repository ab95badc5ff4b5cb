import { condenseOrFail, type AgentConfig } from '@flotilla/agent';
import { withPositionalIds, type EventDraft } from '@flotilla/events';
import type { LanguageModel } from '@flotilla/llm';
import { isConflict, type EventLog } from '@flotilla/log';
import type { CommitHandler, ConversationCache, HandleOutcome, InterruptRegistry } from '@flotilla/runtime';
import { isOutcome, isStillTail, loadDelivered, NOT_TAIL } from './at-tail.js';
import { CondensationWatch } from './condensation-watch.js';
import { incrementalProgress } from './incremental-fold.js';
import { TitleDuty } from './title-duty.js';

const NOTHING_TO_CONDENSE: HandleOutcome = Object.freeze({ ack: true, outcome: 'nothing_to_condense' });
const NOTHING_TO_DO: HandleOutcome = Object.freeze({ ack: true, outcome: 'nothing_to_do' });

export type CondenseHandlerDependencies = {
  readonly log: EventLog;
  readonly cache: ConversationCache;
  readonly agent: AgentConfig;
  readonly llm: () => LanguageModel;
  readonly interrupts: InterruptRegistry;
};

/**
 * The condenser's reaction to a delivered commit: answer an unhandled condensation request at the
 * tail; otherwise, when titles are generated (`agent.titles.generate`), give a conversation owed a
 * title its title (TitleDuty). A condensation comes first: the run waits for it, not for a title.
 */
export function createCondenseHandler(deps: CondenseHandlerDependencies): CommitHandler {
  const progress = incrementalProgress();
  const titles = deps.agent.titles.generate
    ? new TitleDuty({ log: deps.log, cache: deps.cache, llm: deps.llm, stepDue: (events) => progress.of(events).nextWork().kind === 'step' })
    : undefined;
  // most commits need no history here: the cache is left as it is, and catches up when one does
  const watch = new CondensationWatch({ titles: titles !== undefined });
  return async (delivery) => {
    if (watch.nothingDue(delivery)) return titles ? NOTHING_TO_DO : NOTHING_TO_CONDENSE;
    const loaded = await loadDelivered(delivery, deps.log, deps.cache);
    if (isOutcome(loaded)) return loaded;
    const { ref, tail, conversation } = loaded;
    const owed = progress.of(conversation.events);
    watch.note(ref, tail, owed.condensationRequested, titles?.watched(conversation.events));
    if (owed.nextWork().kind !== 'condense') return titles ? await titles.handle(delivery, loaded) : NOTHING_TO_CONDENSE;
    if (!(await isStillTail(delivery, ref, deps.log, deps.cache.tails))) return NOT_TAIL;
    const tracked = deps.interrupts.track(ref, delivery.signal);
    let drafts: EventDraft[];
    try {
      drafts = await condenseOrFail(conversation.events, deps.agent, deps.llm(), { ...ref, source: 'agent' }, tracked.signal);
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
  };
}
