import { AgentCatalog, parseAgentConfig } from '@flotilla/agent';
import { draftEvent, type Event, type EventDraft, type EventType } from '@flotilla/events';
import { LlmError, ScriptedLanguageModel, type ScriptedReply } from '@flotilla/llm';
import { EventLog, type ConversationRef, type Tail } from '@flotilla/log';
import { losingFirstAnswer, type LostWhen } from '@flotilla/log/testing';
import { ConversationCache, InterruptRegistry, type CondenserWakeupReason } from '@flotilla/runtime';
import { startNats, uniqueName } from '@flotilla/testing';
import { createBuiltinTools, ToolRegistry } from '@flotilla/tools';
import { connect } from '@nats-io/transport-node';
import { describe, expect, it } from 'vitest';
import { createCondenseHandler } from './condense-handler.js';
import { ConversationAgents } from './conversation-agents.js';
import { wakeupDelivery } from './test-support/wakeup-delivery.js';

/**
 * A log on a real nats-server, a condense handler on it, and a way to wake it as a step worker
 * would. With `lose`, the handler's first append holding an event of that type loses its answer.
 */
async function fixture(
  replies: ScriptedReply[] | ((index: number) => Promise<ScriptedReply>),
  settings: Record<string, unknown> = {},
  lose?: { of: EventType; when: LostWhen },
) {
  const server = await startNats();
  const nc = await connect({ servers: server.url });
  const name = uniqueName('CH');
  const log = await EventLog.open(nc, { streamName: name, subjectPrefix: `t.${name.toLowerCase()}` });
  const llm = new ScriptedLanguageModel({
    replies: Array.isArray(replies) ? replies : (_request, index) => replies(index),
  });
  const agent = parseAgentConfig({ llm: { provider: 'openai-chat', model: 'm' }, ...settings });
  const agents = new ConversationAgents({
    catalog: new AgentCatalog(agent),
    registry: new ToolRegistry(createBuiltinTools()),
    createModel: () => llm,
  });
  const handlerLog = lose ? losingFirstAnswer(log, lose.of, lose.when).log : log;
  const handle = createCondenseHandler({
    log: handlerLog,
    cache: new ConversationCache(handlerLog, 10),
    agents,
    interrupts: new InterruptRegistry(),
  });
  const ref: ConversationRef = { tenant: 'acme', conversation: uniqueName('c') };
  let tail: Tail = { streamSeq: 0, lastSeq: 0 };
  const system = { ...ref, source: 'system' as const };
  return {
    llm,
    ref,
    log,
    /** Appends a commit of these drafts at the tail; its stream sequence. */
    async append(...drafts: EventDraft[]): Promise<number> {
      tail = await log.tail(ref);
      const commit = await log.append(ref, drafts, { expected: tail });
      return commit.streamSeq;
    },
    created: (title?: string) =>
      draftEvent(system, 'state_change', {
        status: 'idle',
        reason: 'created',
        ...(title === undefined ? {} : { title }),
      }),
    message: (text: string) =>
      draftEvent({ ...ref, source: 'user' }, 'message', { role: 'user', content: [{ type: 'text', text }] }),
    status: (status: 'running' | 'finished') => draftEvent(system, 'state_change', { status }),
    answer: (text: string) =>
      draftEvent({ ...ref, source: 'agent' }, 'message', { role: 'assistant', content: [{ type: 'text', text }] }),
    /** A wake-up for the conversation, delivered as the queue's consumer would. */
    async wake(reason: CondenserWakeupReason | 'garbage' = 'title') {
      return handle(wakeupDelivery(ref, reason));
    },
    condensationRequest: () => draftEvent(system, 'condensation_request', { reason: 'the view is too large' }),
    async events(): Promise<Event[]> {
      return (await log.readEvents(ref)).events;
    },
    async [Symbol.asyncDispose]() {
      await nc.close();
      await server[Symbol.asyncDispose]();
    },
  };
}

const titles = (events: readonly Event[]) =>
  events.flatMap((event) =>
    event.type === 'state_change' && event.title !== undefined ? [[event.source, event.title]] : [],
  );

describe('condense handler: titles', () => {
  it('titles a resting conversation in one commit (usage, then the title) and then owes nothing', async () => {
    await using f = await fixture([{ text: '"Fix the login test"', usage: { inputTokens: 30, outputTokens: 5 } }]);
    await f.append(f.created(), f.message('The login test is flaky, fix it'));
    expect(await f.wake()).toEqual({ ack: true, outcome: 'titled' });
    const events = await f.events();
    expect(
      events
        .slice(2)
        .map((event) => [
          event.type,
          event.type === 'llm_usage' ? event.purpose : '',
          event.type === 'state_change' ? event.reason : '',
        ]),
    ).toEqual([
      ['llm_usage', 'other', ''],
      ['state_change', '', 'generated from the first message'],
    ]);
    expect(titles(events)).toEqual([['system', 'Fix the login test']]);
    // woken again (a duplicate wake-up): nothing is owed, and the wake-up leaves the queue
    expect(await f.wake()).toEqual({ ack: true, outcome: 'nothing_to_do' });
    expect(f.llm.requests).toHaveLength(1);
  });

  it('appends the title at once, even while a step is due (the step is appended after it unchanged)', async () => {
    await using f = await fixture([{ text: 'Speed up CI' }]);
    await f.append(f.created(), f.message('CI takes 40 minutes'), f.status('running'));
    expect(await f.wake('title')).toEqual({ ack: true, outcome: 'titled' });
    expect(titles(await f.events())).toEqual([['system', 'Speed up CI']]);
    expect(f.llm.requests).toHaveLength(1);
  });

  it('drops its title when a user set one while the model was writing it: theirs wins', async () => {
    // while the model writes the title, a user sets one (PATCH)
    const meanwhile: { user?: () => Promise<number> } = {};
    await using f = await fixture(async () => {
      await meanwhile.user!();
      return { text: 'Generated' };
    });
    meanwhile.user = () =>
      f.append(
        draftEvent({ ...f.ref, source: 'user' }, 'state_change', { title: 'Mine', reason: 'updated by the user' }),
      );
    await f.append(f.created(), f.message('Write the docs'));
    expect(await f.wake()).toEqual({ ack: true, outcome: 'title_not_owed' });
    expect(titles(await f.events())).toEqual([['user', 'Mine']]);
  });

  it('records a final failure once, as title_failed without a status, and never tries again', async () => {
    await using f = await fixture([new LlmError('auth', 'The API key was refused.'), { text: 'Never asked' }]);
    await f.append(f.created(), f.message('Fix it'));
    expect(await f.wake()).toEqual({ ack: true, outcome: 'title_failed' });
    const failure = (await f.events()).at(-1)!;
    expect(failure).toMatchObject({ type: 'conversation_error', code: 'title_failed' });
    await f.append(f.message('Please'));
    expect(await f.wake()).toEqual({ ack: true, outcome: 'nothing_to_do' });
    expect(f.llm.requests).toHaveLength(1);
    expect(
      (await f.events()).filter((event) => event.type === 'state_change' && event.status !== undefined),
    ).toHaveLength(1);
  });

  it('asks nothing for a conversation with a title given at creation, nor when titles are turned off', async () => {
    await using given = await fixture([{ text: 'Never asked' }]);
    await given.append(given.created('Given'), given.message('Fix it'));
    expect(await given.wake()).toEqual({ ack: true, outcome: 'nothing_to_do' });
    expect(given.llm.requests).toHaveLength(0);
    await using off = await fixture([{ text: 'Never asked' }], { titles: { generate: false } });
    await off.append(off.created(), off.message('Fix it'));
    expect(await off.wake()).toEqual({ ack: true, outcome: 'nothing_to_do' });
    expect(off.llm.requests).toHaveLength(0);
  });
});

const condensations = (events: readonly Event[]) => events.filter((event) => event.type === 'condensation');

describe('condense handler: condensations', () => {
  it('answers an open request at the tail, once; the title waits for it', async () => {
    await using f = await fixture([{ text: 'A summary of the work so far' }, { text: 'Long run' }]);
    await f.append(f.created(), f.message('Do the long thing'), f.status('running'));
    await f.append(f.answer('Working on it.'), f.condensationRequest());
    // a title's wake-up first: the title waits for the condensation the run waits for
    expect(await f.wake('title')).toEqual({ ack: false, outcome: 'title_after_condensation', delayMs: 1_000 });
    expect(await f.wake('condense')).toEqual({ ack: true, outcome: 'condensed' });
    expect(condensations(await f.events())).toHaveLength(1);
    // the same wake-up again (redelivered, or another step worker's): answered already
    expect(await f.wake('condense')).toEqual({ ack: true, outcome: 'nothing_to_do' });
    expect(condensations(await f.events())).toHaveLength(1);
  });

  it('decides both duties from the log when a wake-up is not one', async () => {
    await using f = await fixture([{ text: 'A summary' }, { text: 'Garbage in' }]);
    await f.append(f.created(), f.message('Do it'), f.status('running'));
    await f.append(f.answer('On it.'), f.condensationRequest());
    expect(await f.wake('garbage')).toEqual({ ack: true, outcome: 'condensed' });
    expect(condensations(await f.events())).toHaveLength(1);
  });
});

describe('condense handler: an append whose answer was lost', () => {
  it.each<LostWhen>(['before_stored', 'after_stored'])(
    'appends the same summary again (answer lost %s): one summary call, one condensation',
    async (when) => {
      await using f = await fixture([{ text: 'A summary' }, { text: 'Long run' }], {}, { of: 'condensation', when });
      await f.append(f.created(), f.message('Do the long thing'), f.status('running'));
      await f.append(f.answer('Working on it.'), f.condensationRequest());
      expect(await f.wake('condense')).toEqual({ ack: true, outcome: 'condensed' });
      expect(condensations(await f.events())).toHaveLength(1);
      expect(f.llm.requests).toHaveLength(1);
    },
  );

  it.each<LostWhen>(['before_stored', 'after_stored'])(
    'appends the same title again (answer lost %s): one title call, one title',
    async (when) => {
      await using f = await fixture([{ text: 'Fix the login test' }], {}, { of: 'state_change', when });
      await f.append(f.created(), f.message('The login test is flaky, fix it'));
      expect(await f.wake('title')).toEqual({ ack: true, outcome: 'titled' });
      expect(titles(await f.events())).toEqual([['system', 'Fix the login test']]);
      expect(f.llm.requests).toHaveLength(1);
    },
  );
});
