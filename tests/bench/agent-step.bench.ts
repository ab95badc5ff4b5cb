import { parseAgentConfig, registryCatalog, step } from '@flotilla/agent';
import { draftEvent, type Event, type EventDraft } from '@flotilla/events';
import { ScriptedLanguageModel } from '@flotilla/llm';
import { createBuiltinTools, ToolRegistry } from '@flotilla/tools';
import { median, ms, table } from './stats.js';

/** An in-memory conversation of about `size` events, shaped like the runtime writes them. */
export function syntheticConversation(size: number): Event[] {
  const ref = { tenant: 'bench', conversation: `step${size}` };
  const drafts: EventDraft[] = [
    draftEvent({ ...ref, source: 'user' }, 'message', {
      role: 'user',
      content: [{ type: 'text', text: 'Fix the failing tests.' }],
    }),
    draftEvent({ ...ref, source: 'system' }, 'state_change', { status: 'running' }),
  ];
  for (let index = 0; drafts.length < size; index += 1) {
    const action = draftEvent({ ...ref, source: 'agent' }, 'action', {
      tool_call_id: `call_${index}`,
      tool_name: 'terminal',
      arguments: JSON.stringify({ command: `pytest tests/test_${index}.py -q` }),
      input: { command: `pytest tests/test_${index}.py -q` },
      thought: [{ type: 'text', text: `Step ${index}: run the next test file.` }],
      response_id: `resp_${index}`,
      security_risk: 'low',
    });
    drafts.push(
      draftEvent({ ...ref, source: 'system' }, 'llm_usage', {
        model: 'm',
        purpose: 'step',
        prompt_tokens: 1000,
        completion_tokens: 50,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        reasoning_tokens: 0,
        latency_ms: 0,
        cost_usd: 0,
      }),
      action,
      draftEvent({ ...ref, source: 'environment' }, 'observation', {
        action_id: action.id,
        tool_call_id: `call_${index}`,
        tool_name: 'terminal',
        content: [{ type: 'text', text: `collected 12 items\n${'tests/test_x.py::test_case PASSED\n'.repeat(16)}` }],
        is_error: false,
      }),
    );
  }
  return drafts.map((draft, index) => ({ ...draft, seq: index + 1 }) as Event);
}

/**
 * Agent-step overhead with a zero-latency scripted model: building the view, the chat messages,
 * the condensation check and the events of one step (the model call itself takes ~0).
 */
export async function benchAgentStep(sizes: readonly number[] = [100, 1_000, 10_000], repeats = 60): Promise<string> {
  const tools = new ToolRegistry(createBuiltinTools());
  const agent = parseAgentConfig({
    llm: { provider: 'openai-chat', model: 'scripted' },
    stuckDetection: { enabled: true },
    condenser: { maxEvents: 1_000_000 },
    limits: { maxIterationsPerRun: 1_000_000 },
  });
  const catalog = registryCatalog(tools, agent.tools);
  const llm = new ScriptedLanguageModel({
    replies: () => ({ toolCalls: [{ id: 'call_next', name: 'terminal', arguments: '{"command":"ls"}' }] }),
  });
  const rows = [['events', 'per step p50', 'per 1,000 events']];
  const perEvent: number[] = [];
  for (const size of sizes) {
    const events = syntheticConversation(size);
    const times: number[] = [];
    for (let round = 0; round < repeats + 5; round += 1) {
      const start = performance.now();
      const result = await step({
        agent,
        llm,
        tools: catalog,
        events,
        conversation: { tenant: 'bench', conversation: `step${size}` },
      });
      if (round >= 5) times.push(performance.now() - start);
      if (result.outcome !== 'actions') throw new Error(`unexpected step outcome ${result.outcome}`);
    }
    perEvent.push(median(times) / size);
    rows.push([String(size), ms(median(times)), ms((median(times) / size) * 1_000)]);
  }
  await tools.close();
  const growth = perEvent.at(-1)! / perEvent[0]!;
  return `Agent-step overhead, zero-latency model (goal: no worse than linear in history)\n${table(rows)}\nper-event cost at ${sizes.at(-1)} vs ${sizes[0]} events: ${growth.toFixed(2)}x (≤ 1 means linear or better)`;
}
