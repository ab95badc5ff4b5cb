import {
  AgentCatalog,
  nextWork,
  parseAgentConfig,
  pauseCommand,
  runCommand,
  type CommandState,
  type ConversationCheckpoint,
} from '@flotilla/agent';
import { draftEvent, type Event, type EventDraft } from '@flotilla/events';
import { ScriptedLanguageModel } from '@flotilla/llm';
import { EventLog, type ConversationRef } from '@flotilla/log';
import { losingFirstAnswer, type LostWhen } from '@flotilla/log/testing';
import {
  ConversationCache,
  InterruptRegistry,
  ServiceMetrics,
  TenantBudgetGuard,
  TenantUsageStore,
  type TenantBudgets,
} from '@flotilla/runtime';
import { startNats, uniqueName } from '@flotilla/testing';
import { createBuiltinTools, ToolRegistry } from '@flotilla/tools';
import { connect } from '@nats-io/transport-node';
import { describe, expect, it } from 'vitest';
import { ConversationAgents } from './conversation-agents.js';
import { createStepHandler } from './step-handler.js';
import { storedDelivery } from './test-support/stored-delivery.js';

/**
 * A log on a real nats-server and a step handler on it whose model, while it "thinks", lets
 * `meanwhile` append to the log: what lands under a step's model call. With `lose`, the step's
 * append loses its answer (`losingFirstAnswer`).
 */
async function fixture(
  meanwhile: (append: (...drafts: EventDraft[]) => Promise<number>, ref: ConversationRef) => Promise<unknown>,
  lose?: LostWhen,
  budgets?: TenantBudgets,
) {
  const server = await startNats();
  const nc = await connect({ servers: server.url });
  const name = uniqueName('SH');
  const log = await EventLog.open(nc, { streamName: name, subjectPrefix: `t.${name.toLowerCase()}` });
  const handlerLog = lose ? losingFirstAnswer(log, 'action', lose).log : log;
  let modelCalls = 0;
  const ref: ConversationRef = { tenant: 'acme', conversation: uniqueName('c') };
  const append = async (...drafts: EventDraft[]): Promise<number> =>
    (await log.append(ref, drafts, { expected: await log.tail(ref) })).streamSeq;
  const llm = new ScriptedLanguageModel({
    replies: async () => {
      modelCalls += 1;
      await meanwhile(append, ref);
      return { toolCalls: [{ id: 'call_1', name: 'think', arguments: '{"thought":"plan"}' }] };
    },
  });
  const agent = parseAgentConfig({ llm: { provider: 'openai-chat', model: 'm' } });
  const agents = new ConversationAgents({
    catalog: new AgentCatalog(agent),
    registry: new ToolRegistry(createBuiltinTools()),
    createModel: () => llm,
  });
  const metrics = new ServiceMetrics('step-worker');
  const usage = budgets ? await TenantUsageStore.open(nc) : undefined;
  const guard = budgets && usage ? new TenantBudgetGuard(budgets, usage) : undefined;
  const handle = createStepHandler({
    log: handlerLog,
    cache: new ConversationCache<ConversationCheckpoint>(handlerLog, 10),
    agents,
    interrupts: new InterruptRegistry(),
    nc,
    metrics,
    streamDeltas: false,
    ...(guard ? { budgets: guard } : {}),
  });
  const system = { ...ref, source: 'system' as const };
  return {
    ref,
    append,
    metrics,
    modelCalls: () => modelCalls,
    usage,
    start: () =>
      append(
        draftEvent(system, 'state_change', { status: 'idle', reason: 'created' }),
        draftEvent({ ...ref, source: 'user' }, 'message', {
          role: 'user',
          content: [{ type: 'text', text: 'Plan it' }],
        }),
        draftEvent(system, 'state_change', { status: 'running' }),
      ),
    deliver: async (streamSeq: number) => handle(await storedDelivery(log, ref, streamSeq)),
    events: async (): Promise<Event[]> => (await log.readEvents(ref)).events,
    async [Symbol.asyncDispose]() {
      await nc.close();
      await server[Symbol.asyncDispose]();
    },
  };
}

const system = (ref: ConversationRef) => ({ ...ref, source: 'system' as const });

/** Drafts as the events they would be after `log`. */
const appended = (log: readonly Event[], drafts: readonly EventDraft[]): Event[] =>
  drafts.map((draft, index) => ({ ...draft, seq: log.length + index + 1 }) as Event);

describe('step handler: what lands under a step', () => {
  it('appends the step after a title that landed under its model call, unchanged, instead of throwing the call away', async () => {
    await using f = await fixture(async (append, ref) => {
      await append(
        draftEvent(system(ref), 'llm_usage', {
          purpose: 'other',
          model: 'm',
          prompt_tokens: 10,
          completion_tokens: 3,
          cache_read_tokens: 0,
          cache_write_tokens: 0,
          reasoning_tokens: 0,
          cost_usd: 0,
          latency_ms: 5,
        }),
        draftEvent(system(ref), 'state_change', { title: 'Plan it', reason: 'generated from the first message' }),
      );
    });
    expect(await f.deliver(await f.start())).toEqual({ ack: true, outcome: 'actions' });
    const types = (await f.events()).map((event) => event.type);
    // the title's commit, then the step's (its first: the system prompt it was asked with first)
    expect(types.slice(3)).toEqual(['llm_usage', 'state_change', 'system_prompt', 'llm_usage', 'action']);
  });

  it('appends the step after a pause that landed under its model call, and the run then rests paused (pause after the current step)', async () => {
    await using f = await fixture(async (append, ref) => {
      await append(...pauseCommand({ status: 'running' } as CommandState, ref));
    });
    expect(await f.deliver(await f.start())).toEqual({ ack: true, outcome: 'actions' });
    const events = await f.events();
    expect(events.slice(3).map((event) => event.type)).toEqual([
      'pause',
      'state_change',
      'system_prompt',
      'llm_usage',
      'action',
    ]);
    // paid for and kept: the reply and its usage; nothing runs until the user resumes
    expect(f.modelCalls()).toBe(1);
    expect(nextWork(events).kind).toBe('rest');
    expect(
      nextWork([...events, ...appended(events, runCommand({ status: 'paused' } as CommandState, f.ref))]).kind,
    ).toBe('execute');
  });

  it("throws the step away when a user's message landed under it (the next delivery decides again)", async () => {
    await using f = await fixture(async (append, ref) => {
      await append(
        draftEvent({ ...ref, source: 'user' }, 'message', {
          role: 'user',
          content: [{ type: 'text', text: 'Also this' }],
        }),
      );
    });
    expect(await f.deliver(await f.start())).toEqual({ ack: true, outcome: 'conflict' });
    expect((await f.events()).filter((event) => event.type === 'action')).toEqual([]);
  });
});

describe('step handler: a step whose append lost its answer', () => {
  it.each<LostWhen>(['before_stored', 'after_stored'])(
    'appends the same commit again (answer lost %s): one model call, one step in the log',
    async (lost) => {
      await using f = await fixture(async () => undefined, lost);
      expect(await f.deliver(await f.start())).toEqual({ ack: true, outcome: 'actions' });
      expect(f.modelCalls()).toBe(1);
      const types = (await f.events()).map((event) => event.type);
      expect(types.slice(3)).toEqual(['system_prompt', 'llm_usage', 'action']);
    },
  );
});

describe('step handler: tenant budgets', () => {
  it("stops the run instead of taking a step once the tenant's budget is reached, without calling the model", async () => {
    // the scripted model reports no usage: the tenant's spending comes from the bucket, where another worker counted it
    await using f = await fixture(async () => undefined, undefined, { tenants: { acme: { day: { tokens: 50 } } } });
    const running = await f.start();
    expect(await f.deliver(running)).toMatchObject({ ack: true, outcome: 'actions' });
    expect(f.modelCalls()).toBe(1);
    await f.usage!.add('acme', { usd: 0, tokens: 50 }, new Date());
    // the next step is owed (its results came); the budget is spent: no model call, the run ends saying why
    const events = await f.events();
    const action = events.find((event) => event.type === 'action')!;
    const results = await f.append(
      draftEvent({ ...f.ref, source: 'environment' }, 'observation', {
        action_id: action.id,
        tool_call_id: action.type === 'action' ? action.tool_call_id : '',
        tool_name: 'think',
        content: [{ type: 'text', text: 'ok' }],
        is_error: false,
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 1_100)); // past the guard's cache of the tenant's usage
    expect(await f.deliver(results)).toMatchObject({ ack: true, outcome: 'error' });
    expect(f.modelCalls()).toBe(1);
    const after = await f.events();
    expect(after.at(-2)).toMatchObject({ type: 'conversation_error', code: 'tenant_budget_reached' });
    expect(after.at(-1)).toMatchObject({
      type: 'state_change',
      status: 'error',
      reason: 'tenant acme reached its daily budget of 50 tokens (50 used)',
    });
  });
});
