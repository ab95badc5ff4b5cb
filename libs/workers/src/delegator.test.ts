import {
  AgentCatalog,
  childConversationId,
  childDrafts,
  parseAgentConfig,
  planDelegations,
  readAgentSpec,
  type AgentSpec,
} from '@flotilla/agent';
import {
  draftEvent,
  withPositionalIds,
  type ActionEvent,
  type Event,
  type EventDraft,
  type EventType,
} from '@flotilla/events';
import { EventLog, type ConversationRef } from '@flotilla/log';
import { losingFirstAnswer, type LostWhen } from '@flotilla/log/testing';
import { ConversationCache, ServiceMetrics } from '@flotilla/runtime';
import { startNats, uniqueName } from '@flotilla/testing';
import { connect } from '@nats-io/transport-node';
import { describe, expect, it } from 'vitest';
import { Delegator } from './delegator.js';
import { storedDelivery } from './test-support/stored-delivery.js';

const definition = (name: string): string =>
  `---\nname: ${name}\ndescription: The ${name}.\ntools: [terminal, finish]\n---\nYou are the ${name}.`;

/**
 * A log on a real nats-server, a delegator on it, and a parent whose spec offers two sub-agents.
 * With `lose`, the delegator's first append holding an event of that type loses its answer.
 */
async function fixture(limits: Record<string, unknown> = {}, lose?: { of: EventType; when: LostWhen }) {
  const server = await startNats();
  const nc = await connect({ servers: server.url });
  const name = uniqueName('DG');
  const log = await EventLog.open(nc, { streamName: name, subjectPrefix: `t.${name.toLowerCase()}` });
  const catalog = new AgentCatalog(
    parseAgentConfig({ llm: { provider: 'openai-chat', model: 'm' }, tools: ['terminal', 'finish'] }),
    { subAgents: [definition('researcher'), definition('builder')], limits },
  );
  const spec: AgentSpec = catalog.resolve({
    spec: { tools: ['terminal', 'task', 'finish'], subAgents: ['researcher', 'builder'] },
  }).spec;
  const delegatorLog = lose ? losingFirstAnswer(log, lose.of, lose.when) : { log, lost: () => 0 };
  const metrics = new ServiceMetrics('delegator');
  const delegator = new Delegator({
    log: delegatorLog.log,
    cache: new ConversationCache(delegatorLog.log, 100),
    nc,
    metrics,
  });
  const handle = delegator.handler();
  const parent: ConversationRef = { tenant: 'acme', conversation: uniqueName('lead') };
  const system = (ref: ConversationRef) => ({ ...ref, source: 'system' as const });
  const append = async (ref: ConversationRef, drafts: readonly EventDraft[]): Promise<number> => {
    const tail = await log.tail(ref);
    return (await log.append(ref, withPositionalIds(drafts, tail.lastSeq + 1), { expected: tail })).streamSeq;
  };
  const events = async (ref: ConversationRef): Promise<Event[]> => (await log.readEvents(ref)).events;
  await append(parent, [
    draftEvent(system(parent), 'state_change', { status: 'idle' }),
    draftEvent({ ...parent, source: 'user' }, 'agent_spec', {
      spec: JSON.parse(JSON.stringify(spec)) as never,
      reason: 'test',
    }),
    draftEvent(system(parent), 'state_change', { status: 'running' }),
  ]);
  return {
    log,
    nc,
    spec,
    answersLost: delegatorLog.lost,
    /** The delegator's appends counted as conflicts. */
    conflicts: async () =>
      (await metrics.appends.get()).values.find((value) => value.labels.result === 'conflict')?.value ?? 0,
    parent,
    append,
    events,
    system,
    /** The parent's step: task calls, one per [agent, prompt]. */
    async delegate(...calls: [string, string][]): Promise<ActionEvent[]> {
      const agent = { ...parent, source: 'agent' as const };
      await append(
        parent,
        calls.map(([agentName, prompt], index) =>
          draftEvent(agent, 'action', {
            tool_call_id: `call_${index}`,
            tool_name: 'task',
            arguments: '{}',
            input: { agent: agentName, prompt },
            thought: [],
            response_id: 'r1',
            security_risk: 'low',
          }),
        ),
      );
      return (await events(parent)).filter((event): event is ActionEvent => event.type === 'action');
    },
    /** Delivers a conversation's last commit to the delegator, as its group's consumer would. */
    async deliver(ref: ConversationRef) {
      return handle(await storedDelivery(log, ref, (await log.tail(ref)).streamSeq));
    },
    children: async (): Promise<ConversationRef[]> =>
      (await events(parent)).flatMap((event) =>
        event.type === 'subagent_started' ? [{ tenant: parent.tenant, conversation: event.child }] : [],
      ),
    async finish(child: ConversationRef, answer: string): Promise<void> {
      await append(child, [
        draftEvent({ ...child, source: 'agent' }, 'message', {
          role: 'assistant',
          content: [{ type: 'text', text: answer }],
        }),
        draftEvent(system(child), 'state_change', { status: 'finished' }),
      ]);
    },
    status: async (ref: ConversationRef) =>
      (await events(ref)).findLast((event) => event.type === 'state_change' && event.status !== undefined)?.[
        'status' as never
      ] as string | undefined,
    async [Symbol.asyncDispose]() {
      await nc.close();
      await server[Symbol.asyncDispose]();
    },
  };
}

describe('delegator', () => {
  it('starts a child per task call, answers the parent once, with every child’s final response, after the last child is done', async () => {
    await using f = await fixture();
    const [research, build] = await f.delegate(['researcher', 'Find the bug.'], ['builder', 'Build the fix.']);
    expect(await f.deliver(f.parent)).toMatchObject({ ack: true });
    const parentEvents = await f.events(f.parent);
    expect(parentEvents.filter((event) => event.type === 'subagent_started')).toMatchObject([
      {
        action_id: research!.id,
        tool_call_id: 'call_0',
        agent: 'researcher',
        child: childConversationId(f.parent, research!.id),
      },
      {
        action_id: build!.id,
        tool_call_id: 'call_1',
        agent: 'builder',
        child: childConversationId(f.parent, build!.id),
      },
    ]);
    const [first, second] = await f.children();
    const child = await f.events(first!);
    expect(child.map((event) => event.type)).toEqual([
      'state_change',
      'agent_spec',
      'subagent_task',
      'message',
      'state_change',
    ]);
    expect(child[2]).toMatchObject({
      parent_call: { conversation: f.parent.conversation, action_id: research!.id, tool_call_id: 'call_0' },
      depth: 1,
      workspace: f.parent.conversation,
    });
    expect(child[3]).toMatchObject({ source: 'user', content: [{ text: 'Find the bug.' }] });
    // delivered again (a redelivery, another instance): nothing more
    await f.deliver(f.parent);
    expect((await f.events(f.parent)).length).toBe(parentEvents.length);
    expect((await f.events(first!)).length).toBe(5);

    await f.finish(first!, 'The bug is in parse().');
    expect(await f.deliver(first!)).toMatchObject({ outcome: 'waiting' });
    expect((await f.events(f.parent)).some((event) => event.type === 'observation')).toBe(false);
    await f.finish(second!, 'Fixed and tested.');
    await f.deliver(second!);
    const answers = (await f.events(f.parent)).filter((event) => event.type === 'observation');
    expect(answers).toMatchObject([
      {
        action_id: research!.id,
        tool_call_id: 'call_0',
        is_error: false,
        content: [{ text: 'The bug is in parse().' }],
        details: { child: first!.conversation, status: 'finished' },
      },
      { action_id: build!.id, tool_call_id: 'call_1', is_error: false, content: [{ text: 'Fixed and tested.' }] },
    ]);
    // one commit holds both answers: the parent's next step reads them together
    expect(new Set(answers.map((answer) => answer.id.slice(0, 13))).size).toBe(1);
    // nothing owed any more, from either side
    const length = (await f.events(f.parent)).length;
    await f.deliver(first!);
    await f.deliver(f.parent);
    expect((await f.events(f.parent)).length).toBe(length);
  }, 30_000);

  it('after a crash between making a child and recording it, makes no second child and records the one there', async () => {
    await using f = await fixture();
    const actions = await f.delegate(['researcher', 'Find the bug.'], ['builder', 'Build the fix.']);
    // as a delegator that died after its first child: the child exists, the parent does not say so
    const parentEvents = await f.events(f.parent);
    const plan = planDelegations({
      ref: f.parent,
      actions,
      spec: readAgentSpec(parentEvents[1] as never),
      depth: 0,
      atWork: 0,
    });
    const made = { tenant: 'acme', conversation: plan.accepted[0]!.child };
    await f.append(
      made,
      childDrafts({
        parent: f.parent,
        parentSpec: f.spec,
        parentDepth: 0,
        parentWorkspace: f.parent.conversation,
        delegation: plan.accepted[0]!,
      }),
    );
    await f.finish(made, 'early');
    await f.deliver(made);
    expect((await f.children()).map((child) => child.conversation)).toEqual(
      plan.accepted.map((accepted) => accepted.child),
    );
    expect((await f.events(made)).length).toBe(7);
    expect((await f.events({ tenant: 'acme', conversation: plan.accepted[1]!.child })).length).toBe(5);
  }, 30_000);

  it('pauses or interrupts the children of a parent stopped while they work (the interrupt on core NATS too), and runs them again with it', async () => {
    await using f = await fixture();
    await f.delegate(['researcher', 'Find the bug.'], ['builder', 'Build the fix.']);
    await f.deliver(f.parent);
    const children = await f.children();
    await f.finish(children[1]!, 'done early');
    const signals: string[] = [];
    const subscription = f.nc.subscribe('flotilla.signal.interrupt.acme.*', {
      callback: (_error, message) => void signals.push(message.subject),
    });
    await f.nc.flush();
    await f.append(f.parent, [
      draftEvent({ ...f.parent, source: 'user' }, 'interrupt', { reason: 'stop' }),
      draftEvent(f.system(f.parent), 'state_change', { status: 'paused' }),
    ]);
    await f.deliver(f.parent);
    const stopped = await f.events(children[0]!);
    expect(stopped.slice(-2)).toMatchObject([
      { type: 'interrupt', source: 'system', reason: 'its parent conversation was interrupted' },
      { type: 'state_change', status: 'paused' },
    ]);
    await expect.poll(() => signals).toEqual([`flotilla.signal.interrupt.acme.${children[0]!.conversation}`]);
    // the child that had finished stays as it is, and nobody is answered while one child is paused
    expect(await f.status(children[1]!)).toBe('finished');
    expect((await f.events(f.parent)).some((event) => event.type === 'observation')).toBe(false);
    subscription.unsubscribe();

    await f.append(f.parent, [
      draftEvent(f.system(f.parent), 'state_change', { status: 'running', reason: 'run requested' }),
    ]);
    await f.deliver(f.parent);
    expect((await f.events(children[0]!)).at(-1)).toMatchObject({
      type: 'state_change',
      status: 'running',
      reason: 'its parent conversation runs again',
    });
  }, 30_000);

  it('answers the calls beyond the limits with errors the model reads, and a deleted child’s call with an error', async () => {
    await using f = await fixture({ maxSubAgents: 1 });
    const [first, second] = await f.delegate(['researcher', 'One.'], ['builder', 'Two.']);
    await f.deliver(f.parent);
    const parentEvents = await f.events(f.parent);
    expect(parentEvents.filter((event) => event.type === 'subagent_started')).toMatchObject([{ action_id: first!.id }]);
    expect(parentEvents.filter((event) => event.type === 'agent_error')).toMatchObject([
      { action_id: second!.id, tool_call_id: 'call_1', error: expect.stringContaining('At most 1 sub-agents') },
    ]);
    // the child's log is purged (its conversation deleted): its call is answered as such
    const [child] = await f.children();
    await f.log.purge(child!);
    await f.deliver(f.parent);
    expect((await f.events(f.parent)).at(-1)).toMatchObject({
      type: 'observation',
      action_id: first!.id,
      is_error: true,
      details: { status: 'deleted' },
    });
  }, 30_000);
});

describe('delegator: an append whose answer was lost', () => {
  const cases = (['subagent_task', 'subagent_started', 'observation'] as const).flatMap((of) =>
    (['before_stored', 'after_stored'] as const).map((when) => ({ of, when })),
  );
  it.each(cases)(
    'appends the same commit again (the answer of $of lost $when): one child per call, recorded once, answered once, no conflict',
    async (lost) => {
      await using f = await fixture({}, lost);
      await f.delegate(['researcher', 'Find the bug.'], ['builder', 'Build the fix.']);
      expect(await f.deliver(f.parent)).toMatchObject({ ack: true });
      const children = await f.children();
      expect(children).toHaveLength(2);
      for (const child of children)
        expect((await f.events(child)).map((event) => event.type)).toEqual([
          'state_change',
          'agent_spec',
          'subagent_task',
          'message',
          'state_change',
        ]);
      await f.finish(children[0]!, 'The bug is in parse().');
      await f.finish(children[1]!, 'Fixed and tested.');
      await f.deliver(children[1]!);
      expect(f.answersLost()).toBe(1);
      const parentEvents = await f.events(f.parent);
      expect(parentEvents.filter((event) => event.type === 'subagent_started')).toHaveLength(2);
      const answers = parentEvents.filter((event) => event.type === 'observation');
      expect(answers).toMatchObject([
        { content: [{ text: 'The bug is in parse().' }] },
        { content: [{ text: 'Fixed and tested.' }] },
      ]);
      expect(answers).toHaveLength(2);
      // the repeat was the same commit, stored once: never taken for another writer's
      expect(await f.conflicts()).toBe(0);
    },
    30_000,
  );
});
