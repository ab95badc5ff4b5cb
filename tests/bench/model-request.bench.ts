import { parseAgentConfig, registryCatalog } from '@flotilla/agent';
import {
  createLanguageModel,
  parseLlmConfig,
  type ChatMessage,
  type LanguageModel,
  type ToolSchema,
} from '@flotilla/llm';
import { createBuiltinTools, ToolRegistry } from '@flotilla/tools';
import { buildView, toChatMessages } from '@flotilla/view';
import { syntheticConversation } from './agent-step.bench.js';
import { median, ms, ratio, table } from './stats.js';

/** A complete, non-streamed answer per provider: the call ends as soon as its request is built and sent. */
const ANSWERS = {
  'openai-chat': {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 0,
    model: 'm',
    choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop', logprobs: null }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  },
  'openai-responses': {
    id: 'resp_1',
    object: 'response',
    created_at: 0,
    status: 'completed',
    model: 'm',
    output: [
      {
        type: 'message',
        id: 'msg_1',
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text: 'ok', annotations: [] }],
      },
    ],
    usage: {
      input_tokens: 1,
      output_tokens: 1,
      total_tokens: 2,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens_details: { reasoning_tokens: 0 },
    },
  },
  anthropic: {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'm',
    content: [{ type: 'text', text: 'ok' }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 1, output_tokens: 1 },
  },
} as const;

/**
 * What one model request costs to make, through the provider SDK, as the conversation grows. The
 * SDK's `fetch` is replaced by one that takes the request body and answers at once, so the figure
 * is the adapter's and the SDK's CPU, not a network's. Baseline, in the same run: the same
 * messages as new objects each time, so every message is encoded anew, as every request did
 * before messages were encoded once.
 */
export async function benchModelRequest(
  sizes: readonly number[] = [100, 1_000, 10_000],
  repeats = 40,
): Promise<string> {
  const registry = new ToolRegistry(createBuiltinTools());
  const agent = parseAgentConfig({ llm: { provider: 'openai-chat', model: 'm' } });
  const tools: ToolSchema[] = registryCatalog(registry, agent.tools)
    .specs()
    .map((spec) => ({ name: spec.name, description: spec.description, parameters: spec.parameters }));
  const rows = [['provider', 'events', 'body', 'each message encoded anew', 'encoded once', 'ratio']];
  for (const provider of Object.keys(ANSWERS) as (keyof typeof ANSWERS)[]) {
    let bodyBytes = 0;
    const answer = JSON.stringify(ANSWERS[provider]);
    const fetch: typeof globalThis.fetch = async (_input, init) => {
      bodyBytes = (init?.body as Uint8Array | string | undefined)?.length ?? 0;
      return new Response(answer, { status: 200, headers: { 'content-type': 'application/json' } });
    };
    const model = createLanguageModel(
      parseLlmConfig({ provider, model: 'm', apiKey: 'unused', baseURL: 'http://127.0.0.1:9/v1' }),
      { fetch },
    );
    for (const size of sizes) {
      const messages = toChatMessages(buildView(syntheticConversation(size)));
      const anew = await timeRequests(model, () => structuredClone(messages), tools, repeats);
      const once = await timeRequests(model, () => messages, tools, repeats);
      rows.push([
        provider,
        String(size),
        `${(bodyBytes / 1024).toFixed(0)} KiB`,
        ms(anew),
        ms(once),
        ratio(once, anew),
      ]);
    }
  }
  await registry.close();
  return `Model request, built and sent through the provider SDK to a fetch that answers at once (p50 per request)\n${table(rows)}`;
}

async function timeRequests(
  model: LanguageModel,
  messages: () => readonly ChatMessage[],
  tools: readonly ToolSchema[],
  repeats: number,
): Promise<number> {
  const times: number[] = [];
  for (let round = 0; round < repeats + 5; round += 1) {
    const request = { messages: messages(), tools };
    const start = performance.now();
    const result = await model.generate(request, {});
    if (round >= 5) times.push(performance.now() - start);
    if (result.content.map((part) => part.text).join('') !== 'ok') throw new Error('unexpected model answer');
  }
  return median(times);
}
