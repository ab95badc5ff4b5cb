import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TITLE_SYSTEM_PROMPT } from '@flotilla/agent';
import { brainReply, hostileReply } from './brain-reply.js';
import { streamForever, streamReply, type ChatReplyMessage } from './brain-stream.js';
import { findTask, progressIn, progressOf, type BrainTask, type ChatMessage } from './brain-task.js';

// many tests import the task and its message from here, beside the server: they stay importable here
export { brainReply } from './brain-reply.js';
export { progressIn, taskMessage, type BrainTask } from './brain-task.js';

/**
 * How the brain answers one summary request: with the summary (`ok`), a tool call and no text
 * (`tool_call`), a server error (`error`, 500), or a context overflow (`overflow`, 400
 * context_length_exceeded).
 */
export type SummaryBehaviour = 'ok' | 'tool_call' | 'error' | 'overflow';

/** How the brain answers one title request: with a title from the task's id (`ok`), or a server error (`error`, 500). */
export type TitleBehaviour = 'ok' | 'error';

/** Title requests are told apart by the title prompt's first line in their system message. */
const TITLE_MARKER = TITLE_SYSTEM_PROMPT.split('\n')[0]!;

export type BrainCall = {
  readonly task: string;
  readonly stream: boolean;
  readonly startedAt: number;
  closedAt?: number;
  completed: boolean;
};

export type BrainServer = AsyncDisposable & {
  readonly baseURL: string;
  readonly calls: BrainCall[];
  /** Every request body received, as sent, when recording (to check what reached the model). */
  readonly requests: string[];
  /** The Authorization header of each recorded request, in the same order. */
  readonly authorizations: (string | undefined)[];
  close(): Promise<void>;
};

/** An OpenAI Chat Completions server (JSON and SSE) that plays a scripted agent. */
export async function startBrainServer(
  options: {
    readonly record?: boolean;
    readonly summaries?: readonly SummaryBehaviour[];
    readonly titles?: readonly TitleBehaviour[];
    readonly titleLatencyMs?: number;
    /** Response ids: unique (default), or `recycled` as a server that counts them from 1 again every fourth reply (a restart, another server after a model switch). */
    readonly responseIds?: 'unique' | 'recycled';
  } = {},
): Promise<BrainServer> {
  // the summary requests, in arrival order, follow this script; `ok` after it
  const summaries = [...(options.summaries ?? [])];
  // the title requests likewise
  const titles = [...(options.titles ?? [])];
  const calls: BrainCall[] = [];
  const requests: string[] = [];
  const authorizations: (string | undefined)[] = [];
  const server = createServer((request, response) => void handle(request, response));
  let counter = 0;
  // the first calls waiting at each meeting point, and the points that met
  const meetings = new Map<string, (() => void)[]>();
  const met = new Set<string>();
  const meet = async ({ group, count, timeoutMs = 20_000 }: NonNullable<BrainTask['meet']>): Promise<void> => {
    if (met.has(group)) return;
    const waiting = meetings.get(group) ?? [];
    meetings.set(group, waiting);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      waiting.push(() => {
        clearTimeout(timer);
        resolve();
      });
      if (waiting.length >= count) {
        met.add(group);
        for (const release of waiting.splice(0)) release();
      }
    });
  };
  // response ids unique across brain servers too, unless `recycled` asks for ids that repeat (the step
  // then gives a repeated one a suffix: the view groups a response's calls by it)
  const instance = randomBytes(4).toString('hex');

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    if (options.record) {
      requests.push(Buffer.concat(chunks).toString('utf8'));
      authorizations.push(request.headers.authorization);
    }
    let body: { messages?: ChatMessage[]; stream?: boolean; model?: string; tools?: unknown[] };
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof body;
    } catch {
      response
        .writeHead(400, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: { message: 'invalid JSON', type: 'invalid_request_error' } }));
      return;
    }
    const messages = body.messages ?? [];
    if (messages[0]?.role === 'system' && JSON.stringify(messages[0].content ?? '').includes(TITLE_MARKER)) {
      // a title request from the condenser: quoted and labelled, as models do, for the cleaning to undo
      const behaviour = titles.shift() ?? 'ok';
      const call: BrainCall = {
        task: `title:${behaviour}`,
        stream: body.stream === true,
        startedAt: Date.now(),
        completed: false,
      };
      calls.push(call);
      if (options.titleLatencyMs) await new Promise((resolve) => setTimeout(resolve, options.titleLatencyMs));
      call.completed = true;
      if (behaviour === 'error') {
        response
          .writeHead(500, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: { message: 'the titler is down', type: 'server_error' } }));
        return;
      }
      const title = `Title: "Work on ${findTask(messages)?.id ?? 'something'}".\n`;
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({
          id: 'chatcmpl-title',
          object: 'chat.completion',
          created: 0,
          model: 'brain',
          choices: [
            { index: 0, message: { role: 'assistant', content: title }, finish_reason: 'stop', logprobs: null },
          ],
          usage: { prompt_tokens: 40, completion_tokens: 6, total_tokens: 46 },
        }),
      );
      return;
    }
    if ((body.tools ?? []).length === 0) {
      // a summary request from the condenser: record how far the forgotten part got
      const summary = `Summary of the work so far. PROGRESS=${progressIn(JSON.stringify(messages), '[A-Za-z0-9-]+')}`;
      const behaviour = summaries.shift() ?? 'ok';
      calls.push({
        task: `summary:${behaviour}`,
        stream: body.stream === true,
        startedAt: Date.now(),
        completed: true,
      });
      if (behaviour === 'error') {
        response
          .writeHead(500, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: { message: 'the summarizer is down', type: 'server_error' } }));
        return;
      }
      if (behaviour === 'overflow') {
        response.writeHead(400, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            error: {
              message: "This model's maximum context length is 1000 tokens.",
              type: 'invalid_request_error',
              code: 'context_length_exceeded',
            },
          }),
        );
        return;
      }
      if (behaviour === 'tool_call') {
        const message = {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_summary', type: 'function', function: { name: 'think', arguments: '{"thought":"no"}' } },
          ],
        };
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(
          JSON.stringify({
            id: 'chatcmpl-summary',
            object: 'chat.completion',
            created: 0,
            model: 'brain',
            choices: [{ index: 0, message, finish_reason: 'tool_calls', logprobs: null }],
            usage: { prompt_tokens: 50, completion_tokens: 10, total_tokens: 60 },
          }),
        );
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({
          id: 'chatcmpl-summary',
          object: 'chat.completion',
          created: 0,
          model: 'brain',
          choices: [
            { index: 0, message: { role: 'assistant', content: summary }, finish_reason: 'stop', logprobs: null },
          ],
          usage: { prompt_tokens: 50, completion_tokens: 10, total_tokens: 60 },
        }),
      );
      return;
    }
    const task = findTask(messages);
    if (!task) {
      response
        .writeHead(400, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: { message: 'no TASK in the conversation', type: 'invalid_request_error' } }));
      return;
    }
    const call: BrainCall = { task: task.id, stream: body.stream === true, startedAt: Date.now(), completed: false };
    calls.push(call);
    response.on('close', () => {
      call.closedAt = Date.now();
    });
    if (task.meet && !messages.some((message) => message.role === 'assistant')) await meet(task.meet);
    if (task.latencyMs) await new Promise((resolve) => setTimeout(resolve, task.latencyMs));
    counter += 1;
    const id =
      options.responseIds === 'recycled'
        ? `chatcmpl-brain-${((counter - 1) % 4) + 1}`
        : `chatcmpl-brain${instance}-${counter}`;
    const hostileTurn = messages.filter((message) => message.role === 'assistant').length;
    const hostile =
      task.hostile !== undefined && hostileTurn < (task.hostileTurns ?? Number.POSITIVE_INFINITY)
        ? task.hostile
        : undefined;
    if (hostile === 'endless_stream') {
      await streamForever(response, id, body.stream === true);
      return;
    }
    // progress survives condensation: summaries carry PROGRESS=<steps done>
    const step = progressOf(messages, task.id);
    const decided = hostile ? hostileReply(task, hostile, hostileTurn) : brainReply(task, step);
    const reply: ChatReplyMessage = decided.toolCalls
      ? {
          content: null,
          tool_calls: decided.toolCalls.map((call) => ({
            id: call.id,
            type: 'function',
            function: { name: call.name, arguments: call.arguments },
          })),
        }
      : { content: decided.text, tool_calls: undefined };
    const finish = reply.tool_calls ? 'tool_calls' : 'stop';
    const usage = {
      prompt_tokens: decided.promptTokens,
      completion_tokens: decided.completionTokens,
      total_tokens: decided.promptTokens + decided.completionTokens,
    };
    if (!body.stream) {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({
          id,
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model: body.model ?? 'brain',
          choices: [{ index: 0, message: { role: 'assistant', ...reply }, finish_reason: finish, logprobs: null }],
          usage,
        }),
      );
      call.completed = true;
      return;
    }
    const slow = task.slowUntil === undefined || call.startedAt < task.slowUntil;
    const completed = await streamReply(response, {
      id,
      model: body.model ?? 'brain',
      reply,
      finish,
      usage,
      pieces: slow ? Math.max(1, task.chunks ?? 1) : 1,
      delayMs: slow ? task.chunkDelayMs : undefined,
    });
    if (completed) call.completed = true;
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const close = async (): Promise<void> => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    calls,
    requests,
    authorizations,
    close,
    [Symbol.asyncDispose]: close,
  };
}
