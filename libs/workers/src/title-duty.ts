import { TitleProgress, titleOrFail, type TitleResult } from '@flotilla/agent';
import { withPositionalIds, type Event } from '@flotilla/events';
import type { LanguageModel } from '@flotilla/llm';
import type { AgentLookup, ConversationAgent } from './conversation-agents.js';
import { appendSurely, isConflict, type ConversationRef, type EventLog } from '@flotilla/log';
import { setRecent, type ConversationCache, type Delivery, type HandleOutcome } from '@flotilla/runtime';
import type { Delivered } from './at-tail.js';
import { IncrementalFold } from './incremental-fold.js';

export type TitleDutyDependencies = {
  readonly log: EventLog;
  readonly cache: ConversationCache;
  /** The conversation's agent, from the spec at the end of these events: whether it wants titles, and its model. */
  readonly agentOf: (events: readonly Event[]) => AgentLookup;
  readonly model: (ref: ConversationRef, agent: ConversationAgent) => Promise<LanguageModel>;
  /** Titles kept in hand at most (conversations whose title met a conflict at every try). */
  readonly maxInHand?: number;
};

/** Re-decisions after conflicting appends before the title waits for its wake-up's next delivery. */
const MAX_CONFLICTS = 20;
/** How long a wake-up whose title met a conflict at every try waits for its next delivery. */
export const TITLE_RETRY_MS = 1_000;

const key = (ref: ConversationRef): string => `${ref.tenant}.${ref.conversation}`;

/**
 * The condenser's second duty: a title for each conversation owed one (`TitleProgress`, decided
 * from the log), written by the model from the first user message, beside the run.
 *
 * The model is called at once, whatever the conversation is doing: the call runs beside the step,
 * and its commit (`titleOrFail`) is appended at the tail as soon as it is written. A step decided
 * meanwhile is appended after it unchanged (a title is nothing a step decides from: `onlyTitles`
 * in the step worker), so no model call is thrown away for it. On a conflict the decision is made
 * again from the log: a title set meanwhile wins and the one generated is dropped; the model is
 * never called again for a title in hand (one that met a conflict at every try waits for its
 * wake-up's next delivery). A process that dies holding one leaves the title owed and its wake-up
 * in the queue, and the instance it is redelivered to decides again.
 */
export class TitleDuty {
  readonly #titles = new IncrementalFold(
    () => new TitleProgress(),
    (progress, events) => progress.append(events),
  );
  readonly #inHand = new Map<string, TitleResult>();

  constructor(private readonly deps: TitleDutyDependencies) {}

  /** The agent, if its spec (readable) asks for titles. */
  #agentWantingTitles(events: readonly Event[]): ConversationAgent | undefined {
    const lookup = this.deps.agentOf(events);
    return lookup.ok && lookup.agent.config.titles.generate ? lookup.agent : undefined;
  }

  /**
   * Generates (or takes in hand) the title a conversation, read up to its tail, is owed, and
   * appends it at the tail.
   */
  async handle(delivery: Delivery, { ref, conversation }: Delivered): Promise<HandleOutcome> {
    const agent = this.#agentWantingTitles(conversation.events);
    const work = this.#titles.of(conversation.events).work();
    if (!agent || work.kind !== 'owed') {
      this.#inHand.delete(key(ref));
      return { ack: true, outcome: 'nothing_to_do' };
    }
    let result = this.#inHand.get(key(ref));
    let current = conversation;
    if (!result) {
      result = await titleOrFail(
        work.message,
        await this.deps.model(ref, agent),
        { ...ref, source: 'system' },
        delivery.signal,
      );
      // the run went on meanwhile: decide at the tail as it is now
      current = await this.deps.cache.load(ref);
    }
    for (let conflicts = 0; ; conflicts += 1) {
      if (this.#titles.of(current.events).work().kind !== 'owed') {
        // set meanwhile (theirs wins), or answered by another condenser
        this.#inHand.delete(key(ref));
        return { ack: true, outcome: 'title_not_owed' };
      }
      if (conflicts >= MAX_CONFLICTS) {
        setRecent(this.#inHand, key(ref), result, this.deps.maxInHand ?? 10_000);
        return { ack: false, outcome: 'title_held', delayMs: TITLE_RETRY_MS };
      }
      try {
        const { tail } = current;
        const commit = await appendSurely(this.deps.log, ref, withPositionalIds(result.drafts, tail.lastSeq + 1), {
          expected: tail,
        });
        this.deps.cache.appended(ref, tail, commit.events, { streamSeq: commit.streamSeq, lastSeq: commit.lastSeq });
        this.#inHand.delete(key(ref));
        return { ack: true, outcome: result.title === undefined ? 'title_failed' : 'titled' };
      } catch (error) {
        if (!isConflict(error)) {
          // the commit is redelivered: the title it brings back is the one in hand
          setRecent(this.#inHand, key(ref), result, this.deps.maxInHand ?? 10_000);
          throw error;
        }
        current = await this.deps.cache.load(ref);
      }
    }
  }
}
