import {
  AgentCatalog,
  parseAgentConfig,
  parseConversationCheckpoint,
  resumeFolds,
  type ConversationCheckpoint,
} from '@flotilla/agent';
import { draftEvent, type Event, type EventDraft } from '@flotilla/events';
import { ScriptedLanguageModel, type GenerateRequest } from '@flotilla/llm';
import { EMPTY_TAIL, EventLog, type ConversationRef, type Tail } from '@flotilla/log';
import {
  CheckpointStore,
  ConversationCache,
  InterruptRegistry,
  loadConversation,
  ServiceMetrics,
  type Delivery,
} from '@flotilla/runtime';
import { startNats, uniqueName, type NatsTestServer } from '@flotilla/testing';
import { createBuiltinTools, ToolRegistry } from '@flotilla/tools';
import { buildView, manipulationIndices, toChatMessages, ViewBuilder } from '@flotilla/view';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CheckpointWriter, type CheckpointOutcome } from './checkpoint-writer.js';
import { ConversationAgents } from './conversation-agents.js';
import { createStepHandler } from './step-handler.js';
import { storedDelivery } from './test-support/stored-delivery.js';

let server: NatsTestServer;
let nc: NatsConnection;
let log: EventLog;
let store: CheckpointStore<ConversationCheckpoint>;

beforeAll(async () => {
  server = await startNats();
  nc = await connect({ servers: server.url });
  const name = uniqueName('CW');
  log = await EventLog.open(nc, { streamName: name, subjectPrefix: `t.${name.toLowerCase()}` });
  store = await CheckpointStore.open(nc, { parse: parseConversationCheckpoint, bucket: `${name}_CHECKPOINTS` });
});

afterAll(async () => {
  await nc.close();
  await server[Symbol.asyncDispose]();
});

/** The conversation written, and for each of its commits what the writer did and the commit's event types. */
type Written = {
  readonly ref: ConversationRef;
  readonly tail: Tail;
  readonly outcomes: CheckpointOutcome[];
  readonly types: string[][];
};

/**
 * A running conversation as the services write it: steps of a think call and its result, and
 * whenever the view passes `maxItems`, a condensation request and the condensation (forgetting
 * about half, the earlier summary with it). Each commit is noted by the writer as it lands.
 */
async function conversation(writer: CheckpointWriter, steps: number, maxItems = 14): Promise<Written> {
  const ref = { tenant: 'acme', conversation: uniqueName('c') };
  const context = (source: Event['source']) => ({ ...ref, source });
  const view = new ViewBuilder();
  const outcomes: CheckpointOutcome[] = [];
  const types: string[][] = [];
  let tail: Tail = EMPTY_TAIL;
  const commit = async (drafts: EventDraft[]): Promise<void> => {
    const stored = await log.append(ref, drafts, { expected: tail });
    tail = { streamSeq: stored.streamSeq, lastSeq: stored.lastSeq };
    view.append(stored.events);
    types.push([...new Set(drafts.map((draft) => draft.type))]);
    outcomes.push(
      await writer.noteCommit(ref, {
        streamSeq: stored.streamSeq,
        lastSeq: stored.lastSeq,
        eventTypes: types.at(-1) ?? [],
      }),
    );
  };
  await commit([
    draftEvent(context('user'), 'message', { role: 'user', content: [{ type: 'text', text: 'Think it through.' }] }),
    draftEvent(context('system'), 'state_change', { status: 'running' }),
  ]);
  await commit([draftEvent(context('agent'), 'system_prompt', { static_prompt: 'You think.', tools: [] })]);
  for (let step = 0; step < steps; step += 1) {
    const action = draftEvent(context('agent'), 'action', {
      tool_call_id: `call_${step}`,
      tool_name: 'think',
      arguments: '{}',
      input: { thought: `${step}` },
      thought: [],
      response_id: `r${step}`,
      security_risk: 'low',
    });
    const usage = {
      model: 'm',
      prompt_tokens: 10,
      completion_tokens: 1,
      cache_read_tokens: 0,
      cache_write_tokens: 0,
      reasoning_tokens: 0,
      latency_ms: 1,
      cost_usd: 0.001,
    };
    await commit([draftEvent(context('system'), 'llm_usage', { ...usage, purpose: 'step' }), action]);
    await commit([
      draftEvent(context('system'), 'execution_started', { action_ids: [action.id], runner: 'runner-1' }),
      draftEvent(context('environment'), 'observation', {
        action_id: action.id,
        tool_call_id: `call_${step}`,
        tool_name: 'think',
        content: [{ type: 'text', text: `thought ${step} noted` }],
        is_error: false,
      }),
    ]);
    const items = view.view().items;
    if (items.length <= maxItems) continue;
    await commit([draftEvent(context('system'), 'condensation_request', {})]);
    const indices = manipulationIndices(items);
    const start = indices.find((index) => index >= 3) ?? items.length;
    const end = indices.find((index) => index >= Math.ceil(items.length / 2)) ?? items.length;
    await commit([
      draftEvent(context('agent'), 'condensation', {
        forgotten_event_ids: items.slice(start, end).map((item) => item.id),
        summary: `summary after step ${step}`,
        summary_offset: start,
      }),
      draftEvent(context('system'), 'llm_usage', { ...usage, purpose: 'condensation' }),
    ]);
  }
  return { ref, tail, outcomes, types };
}

describe('view checkpoint writer', () => {
  it("writes a checkpoint at each condensation, each from the one before, from which the view is the whole log's", async () => {
    const writer = new CheckpointWriter(log, store, { everyEvents: 10_000 });
    const { ref, tail, outcomes } = await conversation(writer, 40);
    const written = outcomes.filter((outcome) => outcome === 'written').length;
    expect(written).toBeGreaterThan(5);
    expect(outcomes.filter((outcome) => outcome !== 'not_due' && outcome !== 'written')).toEqual([]);
    const { events } = await log.readEvents(ref);
    const loaded = await loadConversation(log, ref, tail.streamSeq, { store });
    expect(loaded.start).toBeDefined();
    // what came after the checkpoint, and the last steps before it that stuck detection looks back at
    expect(loaded.events.length).toBeLessThan(events.length / 2);
    const folds = resumeFolds(loaded.start?.state, loaded.start?.folded);
    folds.view.append(loaded.events.slice(loaded.start?.folded));
    expect(folds.view.view()).toEqual(buildView(events));
    expect(toChatMessages(folds.view.view())).toEqual(toChatMessages(buildView(events)));
  });

  it('writes one every `everyEvents` events without condensations, none before the system prompt, and skips what is stored already', async () => {
    const writer = new CheckpointWriter(log, store, { everyEvents: 20 });
    const { ref, tail, outcomes } = await conversation(writer, 30, 1_000);
    expect(outcomes.filter((outcome) => outcome === 'written')).toHaveLength(6);
    const stored = await store.get(ref);
    expect(tail.lastSeq - stored!.lastSeq).toBeLessThan(20);
    expect(
      await writer.noteCommit(ref, {
        streamSeq: stored!.streamSeq,
        lastSeq: stored!.lastSeq,
        eventTypes: ['condensation'],
      }),
    ).toBe('stored_already');
    const early = new CheckpointWriter(log, store, { everyEvents: 1 });
    const fresh = { tenant: 'acme', conversation: uniqueName('c') };
    const first = await log.append(
      fresh,
      [draftEvent({ ...fresh, source: 'user' }, 'message', { role: 'user', content: [{ type: 'text', text: 'hi' }] })],
      { expected: EMPTY_TAIL },
    );
    expect(await early.noteCommit(fresh, { streamSeq: first.streamSeq, lastSeq: 1, eventTypes: ['message'] })).toBe(
      'no_system_prompt',
    );
  });

  it('removes the checkpoint of a view that outgrew what a KV value holds, and tries again only after a condensation', async () => {
    // records are gzipped (a tenth or less of their JSON): this holds only the first views of this conversation
    const small = await CheckpointStore.open(nc, {
      parse: parseConversationCheckpoint,
      bucket: uniqueName('small'),
      maxBytes: 2_000,
    });
    const writer = new CheckpointWriter(log, small, { everyEvents: 20 });
    const { outcomes, types } = await conversation(writer, 40, 30);
    const decided = outcomes.flatMap((outcome, index) =>
      outcome === 'not_due' ? [] : [{ outcome, condensed: types[index]?.includes('condensation') }],
    );
    // the first ones fit; once one does not, nothing is tried until a condensation, which fits again
    expect(decided[0]?.outcome).toBe('written');
    expect(decided.filter((entry) => entry.outcome === 'not_stored').length).toBeGreaterThan(2);
    decided.forEach((entry, index) => {
      if (entry.outcome === 'not_stored')
        expect(decided[index + 1] ?? { outcome: 'written', condensed: true }).toEqual({
          outcome: 'written',
          condensed: true,
        });
    });
    // and without a condensation to come, the stale one is gone
    const { ref, outcomes: plain } = await conversation(
      new CheckpointWriter(log, small, { everyEvents: 20 }),
      20,
      1_000,
    );
    expect(plain).toContain('not_stored');
    expect(await small.get(ref)).toBeUndefined();
  });

  it('a step worker loading from the checkpoint asks the model exactly what it asks after reading the whole log', async () => {
    const { ref, tail } = await conversation(new CheckpointWriter(log, store, { everyEvents: 10_000 }), 25);
    expect((await store.get(ref))?.streamSeq).toBeLessThan(tail.streamSeq);
    const agent = parseAgentConfig({
      llm: { provider: 'openai-chat', model: 'scripted' },
      tools: ['think', 'finish'],
      condenser: { maxEvents: 1_000 },
    });
    const tools = new ToolRegistry(createBuiltinTools());
    const stepOnce = async (
      cache: ConversationCache<ConversationCheckpoint>,
    ): Promise<{ request: GenerateRequest | undefined; outcome: string }> => {
      const llm = new ScriptedLanguageModel({
        replies: [{ toolCalls: [{ id: 'call_next', name: 'think', arguments: '{"thought":"next"}' }] }],
      });
      const agents = new ConversationAgents({
        catalog: new AgentCatalog(agent),
        registry: tools,
        createModel: () => llm,
      });
      const handle = createStepHandler({
        log,
        cache,
        agents,
        interrupts: new InterruptRegistry(),
        nc,
        metrics: new ServiceMetrics('test'),
        streamDeltas: false,
      });
      const outcome = await handle(await delivery(ref, tail.streamSeq));
      return { request: llm.requests[0], outcome: outcome.outcome };
    };
    const whole = await stepOnce(new ConversationCache(log));
    const fromCheckpoint = await stepOnce(
      new ConversationCache(log, 10, undefined, undefined, { checkpoints: { store } }),
    );
    await tools.close();
    expect(whole.outcome).toBe('actions');
    expect(fromCheckpoint.outcome).toBe('conflict'); // the same tail: the first step got there
    expect(fromCheckpoint.request).toEqual(whole.request);
    expect(whole.request?.messages.length).toBeGreaterThan(5);
  });
});

function delivery(ref: ConversationRef, seq: number): Promise<Delivery> {
  return storedDelivery(log, ref, seq, { eventTypes: ['execution_started', 'observation'] });
}
