import {
  protocolEvents,
  startTestServer,
  type HttpReply,
  type LlmTestServer,
  type RecordedRequest,
} from '@flotilla/llm/testing';

/** The provider a quick-start model server speaks: OpenAI's Chat Completions or Anthropic's Messages. */
export type QuickStartProvider = 'openai-chat' | 'anthropic';

export type QuickStartModel = AsyncDisposable & {
  /** What FLOTILLA_LLM_BASE_URL is set to: `<url>/v1` for OpenAI's SDK, the server's root for Anthropic's. */
  readonly baseURL: string;
  readonly requests: readonly RecordedRequest[];
  /** The key each request carried (`x-api-key`, else the bearer token of `Authorization`). */
  keys(): (string | undefined)[];
};

type Reply = { readonly text: string } | { readonly tool: string; readonly input: Record<string, unknown> };

/**
 * A local model server for the README's quick start, speaking `provider`'s wire protocol (JSON or
 * an event stream, as asked): an agent that runs `ls` in the terminal, then finishes saying what
 * it saw; a request without tools (a title, a summary) gets a line of text.
 */
export async function startQuickStartModel(provider: QuickStartProvider): Promise<QuickStartModel> {
  const server: LlmTestServer = await startTestServer();
  const answer = (request: RecordedRequest): HttpReply => {
    const body = request.body as { tools?: unknown[]; messages?: unknown[]; stream?: boolean; model?: string };
    const model = body.model ?? 'quick-start';
    const ran = JSON.stringify(body.messages ?? []).includes(
      provider === 'anthropic' ? '"tool_result"' : '"role":"tool"',
    );
    const reply: Reply =
      (body.tools ?? []).length === 0
        ? { text: 'Listing the files' }
        : ran
          ? { tool: 'finish', input: { message: 'Listed the files of the workspace.' } }
          : { tool: 'terminal', input: { command: 'ls -la' } };
    return provider === 'anthropic'
      ? anthropicReply(reply, model, body.stream === true)
      : openAIReply(reply, model, body.stream === true);
  };
  // every request is answered by the same agent, deciding from what it is sent
  server.enqueue(...Array.from({ length: 200 }, () => answer));
  return {
    baseURL: provider === 'anthropic' ? server.url : server.baseURL,
    requests: server.requests,
    keys: () =>
      server.requests.map(({ headers }) => {
        const key = headers['x-api-key'] ?? headers['authorization'];
        return typeof key === 'string' ? key.replace(/^Bearer /, '') : undefined;
      }),
    [Symbol.asyncDispose]: () => server.close(),
  };
}

const usage = { prompt_tokens: 30, completion_tokens: 8, total_tokens: 38 };

function openAIReply(reply: Reply, model: string, stream: boolean): HttpReply {
  const id = `chatcmpl-quick-${Math.random().toString(36).slice(2)}`;
  const toolCall =
    'tool' in reply
      ? {
          id: `call_${reply.tool}`,
          type: 'function',
          function: { name: reply.tool, arguments: JSON.stringify(reply.input) },
        }
      : undefined;
  const finish = toolCall ? 'tool_calls' : 'stop';
  if (!stream) {
    const message = toolCall
      ? { role: 'assistant', content: null, tool_calls: [toolCall] }
      : { role: 'assistant', content: 'text' in reply ? reply.text : '' };
    return {
      type: 'json',
      body: {
        id,
        object: 'chat.completion',
        created: 0,
        model,
        choices: [{ index: 0, message, finish_reason: finish, logprobs: null }],
        usage,
      },
    };
  }
  const chunk = (delta: unknown, finishReason: string | null = null): unknown => ({
    id,
    object: 'chat.completion.chunk',
    created: 0,
    model,
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  });
  const content = toolCall
    ? [
        chunk({
          tool_calls: [
            { index: 0, id: toolCall.id, type: 'function', function: { name: toolCall.function.name, arguments: '' } },
          ],
        }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: toolCall.function.arguments } }] }),
      ]
    : [chunk({ content: 'text' in reply ? reply.text : '' })];
  return {
    type: 'sse',
    events: protocolEvents('openai-chat', [
      chunk({ role: 'assistant', content: '' }),
      ...content,
      chunk({}, finish),
      { id, object: 'chat.completion.chunk', created: 0, model, choices: [], usage },
    ]),
  };
}

function anthropicReply(reply: Reply, model: string, stream: boolean): HttpReply {
  const id = `msg_quick_${Math.random().toString(36).slice(2)}`;
  const block =
    'tool' in reply
      ? { type: 'tool_use', id: `toolu_${reply.tool}`, name: reply.tool, input: reply.input }
      : { type: 'text', text: reply.text };
  const stopReason = 'tool' in reply ? 'tool_use' : 'end_turn';
  if (!stream) {
    return {
      type: 'json',
      body: {
        id,
        type: 'message',
        role: 'assistant',
        model,
        content: [block],
        stop_reason: stopReason,
        stop_sequence: null,
        usage: { input_tokens: 30, output_tokens: 8 },
      },
    };
  }
  const start = 'tool' in reply ? { ...block, input: {} } : { type: 'text', text: '' };
  const delta =
    'tool' in reply
      ? { type: 'input_json_delta', partial_json: JSON.stringify(reply.input) }
      : { type: 'text_delta', text: reply.text };
  return {
    type: 'sse',
    events: protocolEvents('anthropic', [
      {
        type: 'message_start',
        message: {
          id,
          type: 'message',
          role: 'assistant',
          model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: 30, output_tokens: 1 },
        },
      },
      { type: 'content_block_start', index: 0, content_block: start },
      { type: 'content_block_delta', index: 0, delta },
      { type: 'content_block_stop', index: 0 },
      { type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: 8 } },
      { type: 'message_stop' },
    ]),
  };
}
