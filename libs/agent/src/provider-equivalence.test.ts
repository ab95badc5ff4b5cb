import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Event, EventDraft } from '@flotilla/events';
import { EventLog } from '@flotilla/log';
import {
  createTestLanguageModel,
  fixtureReply,
  loadFixture,
  protocolEvents,
  startTestServer,
  type FixtureName,
  type TestProvider,
} from '@flotilla/llm/testing';
import { startNats, uniqueName } from '@flotilla/testing';
import { defineTool, openWorkspace, textResult, ToolRegistry } from '@flotilla/tools';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseAgentConfig } from './agent-config.js';
import { LocalConversation } from './local-conversation.js';
import { step } from './step.js';
import { registryCatalog } from './tool-catalog.js';

const FINAL_TEXT = 'package.json declares an ESM package; tsconfig.json enables strict mode.';

/** The final answer of each provider, streamed as its wire format streams it (a step's call always streams). */
const finalAnswer: Record<TestProvider, readonly unknown[]> = {
  'openai-chat': [
    {
      id: 'chatcmpl-final',
      object: 'chat.completion.chunk',
      created: 1751500100,
      model: 'gpt-4.1-2025-04-14',
      choices: [
        {
          index: 0,
          delta: { role: 'assistant', content: FINAL_TEXT, refusal: null },
          logprobs: null,
          finish_reason: null,
        },
      ],
    },
    {
      id: 'chatcmpl-final',
      object: 'chat.completion.chunk',
      created: 1751500100,
      model: 'gpt-4.1-2025-04-14',
      choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }],
    },
    {
      id: 'chatcmpl-final',
      object: 'chat.completion.chunk',
      created: 1751500100,
      model: 'gpt-4.1-2025-04-14',
      choices: [],
      usage: { prompt_tokens: 1400, completion_tokens: 20, total_tokens: 1420 },
    },
  ],
  'openai-responses': [
    {
      type: 'response.output_text.delta',
      sequence_number: 0,
      item_id: 'msg_final',
      output_index: 0,
      content_index: 0,
      delta: FINAL_TEXT,
    },
    {
      type: 'response.completed',
      sequence_number: 1,
      response: {
        id: 'resp_final',
        object: 'response',
        created_at: 1751500300,
        status: 'completed',
        model: 'gpt-5-2025-08-07',
        output: [
          {
            id: 'msg_final',
            type: 'message',
            status: 'completed',
            role: 'assistant',
            content: [{ type: 'output_text', annotations: [], text: FINAL_TEXT }],
          },
        ],
        usage: {
          input_tokens: 1400,
          input_tokens_details: { cached_tokens: 0 },
          output_tokens: 20,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: 1420,
        },
      },
    },
  ],
  anthropic: [
    {
      type: 'message_start',
      message: {
        id: 'msg_final',
        type: 'message',
        role: 'assistant',
        model: 'claude-sonnet-4-6',
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 1400, output_tokens: 0 },
      },
    },
    { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: FINAL_TEXT } },
    { type: 'content_block_stop', index: 0 },
    { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 20 } },
    { type: 'message_stop' },
  ],
};

const FIXTURE: Record<TestProvider, FixtureName> = {
  'openai-chat': 'openai-chat-tool-call',
  'openai-responses': 'openai-responses-tool-call',
  anthropic: 'anthropic-tool-call',
};

const readFileTool = defineTool({
  name: 'read_file',
  description: 'Read a file from the workspace',
  parameters: z.object({ path: z.string() }),
  annotations: { readOnly: true, destructive: false, idempotent: true, openWorld: false },
  resources: () => [],
  execute: async ({ path }, context) => textResult(await readFile(await context.workspace.resolvePath(path), 'utf8')),
});

/** What must be equal across providers: event types, tool calls and results, final answer. */
function shape(events: readonly Event[]): unknown[] {
  return events.map((event) => {
    switch (event.type) {
      case 'action':
        return { type: 'action', tool: event.tool_name, input: event.input, thought: event.thought };
      case 'observation':
        return { type: 'observation', tool: event.tool_name, content: event.content, is_error: event.is_error };
      case 'message':
        return { type: 'message', role: event.role, source: event.source, content: event.content };
      case 'state_change':
        return { type: 'state_change', status: event.status };
      case 'execution_started':
        return { type: 'execution_started', actions: event.action_ids.length };
      default:
        return { type: event.type };
    }
  });
}

describe('one recorded task through every provider path', () => {
  let root: string;
  let cleanup: () => Promise<void>;
  let log: EventLog;

  beforeAll(async () => {
    const server = await startNats();
    const nc = await connect({ servers: server.url });
    const name = uniqueName('EQ');
    log = await EventLog.open(nc, { streamName: name, subjectPrefix: `t.${name.toLowerCase()}` });
    root = await mkdtemp(join(tmpdir(), 'flotilla-eq-'));
    await writeFile(join(root, 'package.json'), '{ "type": "module" }\n');
    await writeFile(join(root, 'tsconfig.json'), '{ "compilerOptions": { "strict": true } }\n');
    cleanup = async () => {
      await nc.close();
      await server[Symbol.asyncDispose]();
      await rm(root, { recursive: true, force: true });
    };
  });
  afterAll(async () => cleanup());

  it('OpenAI Chat Completions, OpenAI Responses and Anthropic yield equivalent event logs', async () => {
    const shapes: unknown[][] = [];
    for (const provider of ['openai-chat', 'openai-responses', 'anthropic'] as const) {
      await using llmServer = await startTestServer();
      llmServer.enqueue(fixtureReply(loadFixture(FIXTURE[provider])), {
        type: 'sse',
        events: protocolEvents(provider, finalAnswer[provider]),
      });
      const tools = new ToolRegistry([readFileTool]);
      const conversation = new LocalConversation({
        log,
        ref: { tenant: 'acme', conversation: uniqueName(provider.replace('-', '')) },
        agent: parseAgentConfig({ llm: { provider, model: 'recorded' }, tools: ['read_file'] }),
        llm: createTestLanguageModel(provider, llmServer),
        tools,
        workspace: await openWorkspace(root),
      });
      await conversation.sendMessage('Compare package.json and tsconfig.json.', { run: true });
      expect(await conversation.run()).toBe('finished');
      const events = await conversation.events();
      const actions = events.filter((event) => event.type === 'action');
      expect(actions.map((action) => action.input)).toEqual([{ path: 'package.json' }, { path: 'tsconfig.json' }]);
      expect(new Set(actions.map((action) => action.response_id)).size).toBe(1);
      expect(events.filter((event) => event.type === 'llm_usage')).toHaveLength(2);
      shapes.push(shape(events));
    }
    expect(shapes[1]).toEqual(shapes[0]);
    expect(shapes[2]).toEqual(shapes[0]);
  });

  it('a step streams its call whether or not its deltas are followed: the same request, the same events', async () => {
    for (const provider of ['openai-chat', 'openai-responses', 'anthropic'] as const) {
      await using llmServer = await startTestServer();
      const fixture = loadFixture(FIXTURE[provider]);
      llmServer.enqueue(fixtureReply(fixture), fixtureReply(fixture));
      const llm = createTestLanguageModel(provider, llmServer);
      const agent = parseAgentConfig({
        llm: { provider, model: 'recorded' },
        tools: ['read_file'],
        prompt: { includeDate: false },
      });
      const catalog = registryCatalog(new ToolRegistry([readFileTool]), agent.tools);
      const events: Event[] = [
        {
          v: 1,
          id: 'm1',
          seq: 1,
          tenant: 'acme',
          conversation: 'c',
          source: 'user',
          timestamp: '2026-01-01T00:00:00.000Z',
          type: 'message',
          role: 'user',
          content: [{ type: 'text', text: 'Compare package.json and tsconfig.json.' }],
        },
        {
          v: 1,
          id: 's1',
          seq: 2,
          tenant: 'acme',
          conversation: 'c',
          source: 'system',
          timestamp: '2026-01-01T00:00:00.000Z',
          type: 'state_change',
          status: 'running',
        },
      ];
      const deltas: string[] = [];
      const plain = await step({
        agent,
        llm,
        tools: catalog,
        events,
        conversation: { tenant: 'acme', conversation: 'c' },
      });
      const streamed = await step({
        agent,
        llm,
        tools: catalog,
        events,
        conversation: { tenant: 'acme', conversation: 'c' },
        onDelta: (delta) => deltas.push(delta.type),
      });
      expect(deltas.length).toBeGreaterThan(0);
      const comparable = (drafts: readonly EventDraft[]): unknown[] =>
        drafts.map(({ id: _id, timestamp: _timestamp, ...rest }) =>
          'latency_ms' in rest ? { ...rest, latency_ms: 0 } : rest,
        );
      expect(comparable(streamed.drafts), provider).toEqual(comparable(plain.drafts));
      expect(streamed.outcome).toBe('actions');
      // the request's body never depends on whether anyone follows the deltas (a replay rebuilds it from the log)
      expect(llmServer.requests.map((request) => (request.body as { stream?: unknown }).stream)).toEqual([true, true]);
      expect(llmServer.requests[1]!.text).toBe(llmServer.requests[0]!.text);
    }
  });
});
