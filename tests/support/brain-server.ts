import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TITLE_SYSTEM_PROMPT } from '@flotilla/agent';

/**
 * The task a test conversation carries in its first user message: `TASK {"id":…,"steps":…}`.
 * The brain is a pure function of the request's messages, so a retried or duplicated LLM call
 * (after a crash) gets the same answer.
 */
export type BrainTask = {
  readonly id: string;
  /** Tool calls before the final answer. */
  readonly steps: number;
  /** File every action appends one line `<id> <step>` to (relative: in the conversation's workspace): counts side effects. */
  readonly effects: string;
  /** Seconds each command sleeps before its side effect (to land kills mid-action). */
  readonly sleep?: number;
  /** Milliseconds of model latency per call. */
  readonly latencyMs?: number;
  /** Stream the reply in this many chunks, one every `chunkDelayMs` (for interrupt tests). */
  readonly chunks?: number;
  readonly chunkDelayMs?: number;
  /** Parallel tool calls per step (default 1). */
  readonly parallel?: number;
  /** Calls that start before this time (epoch ms) stream slowly (`chunks`, `chunkDelayMs`); later ones are quick. */
  readonly slowUntil?: number;
  /** Tool the calls use: `terminal` commands with side effects (default) or no-op `think` calls (benchmarks). */
  readonly tool?: 'terminal' | 'think';
  /** Terminal commands to run instead, one per step (`steps` must be their number). */
  readonly commands?: readonly string[];
  /** The final answer is this many characters long (past what a commit can hold, for the hostile-reply test). */
  readonly finalAnswerChars?: number;
  /** Tool calls to make instead, one per step: any tool with its input. */
  readonly calls?: readonly { readonly tool: string; readonly input: Readonly<Record<string, unknown>> }[];
  /** Parallel tool calls to make instead, one batch per step (`steps` must be their number): any tools with their inputs. */
  readonly batches?: readonly (readonly {
    readonly tool: string;
    readonly input: Readonly<Record<string, unknown>>;
  }[])[];
  /**
   * The task's first model call waits until `count` first calls of tasks with the same `group`
   * are in flight at once (at most `timeoutMs`, default 20 s); later calls pass. Shows calls that
   * run in parallel, on as many step workers when each takes one call at a time.
   */
  readonly meet?: { readonly group: string; readonly count: number; readonly timeoutMs?: number };
  /**
   * A hostile model: `invalid_tool_calls` answers every turn with a call that cannot run (an
   * unknown tool, arguments that are not JSON, arguments failing the schema, in turn);
   * `text_tool_calls` writes its calls as text (`<function=…>` markup, a JSON object, a
   * `<tool_call>` block, in turn) and makes no native call; `endless_stream` streams content that
   * never ends (until the client closes the connection).
   */
  readonly hostile?: 'invalid_tool_calls' | 'text_tool_calls' | 'endless_stream';
  /** Turns the hostile model misbehaves before it answers as an ordinary task (default: every turn). */
  readonly hostileTurns?: number;
};

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

export function taskMessage(task: BrainTask): string {
  return `TASK ${JSON.stringify(task)}`;
}

type ChatMessage = { role: string; content?: unknown; tool_calls?: unknown[] };

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
    const reply = decided.toolCalls
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
    response.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    response.flushHeaders();
    const send = (delta: unknown, finishReason: string | null = null): void => {
      const chunk = {
        id,
        object: 'chat.completion.chunk',
        created: Math.floor(Date.now() / 1000),
        model: body.model ?? 'brain',
        choices: [{ index: 0, delta, finish_reason: finishReason }],
      };
      response.write(`data: ${JSON.stringify(chunk)}\n\n`);
    };
    send({ role: 'assistant', content: '' });
    const slow = task.slowUntil === undefined || call.startedAt < task.slowUntil;
    const pieces = slow ? Math.max(1, task.chunks ?? 1) : 1;
    for (let piece = 0; piece < pieces; piece += 1) {
      if (response.destroyed) return;
      if (slow && task.chunkDelayMs) await new Promise((resolve) => setTimeout(resolve, task.chunkDelayMs));
      if (pieces > 1) send({ content: '.' });
    }
    if (reply.tool_calls) {
      reply.tool_calls.forEach((toolCall, index) => {
        send({
          tool_calls: [
            { index, id: toolCall.id, type: 'function', function: { name: toolCall.function.name, arguments: '' } },
          ],
        });
        send({ tool_calls: [{ index, function: { arguments: toolCall.function.arguments } }] });
      });
    } else {
      send({ content: reply.content });
    }
    send({}, finish);
    response.write(
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 0, model: body.model ?? 'brain', choices: [], usage })}\n\n`,
    );
    response.write('data: [DONE]\n\n');
    response.end();
    call.completed = true;
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

/** What the brain answers at step `step` of `task`: tool calls until the task's steps are done, then a final text. */
export function brainReply(
  task: BrainTask,
  step: number,
): {
  toolCalls?: { id: string; name: string; arguments: string }[];
  text?: string;
  promptTokens: number;
  completionTokens: number;
} {
  const tokens = { promptTokens: 100 + step * 20, completionTokens: 20 };
  if (step >= task.steps)
    return {
      text: task.finalAnswerChars ? 'x'.repeat(task.finalAnswerChars) : `Done: ${task.steps} steps for ${task.id}.`,
      ...tokens,
    };
  const batch = task.batches?.[step];
  if (batch)
    return {
      toolCalls: batch.map((call, index) => ({
        id: `call_${task.id}_${step}_${index}`,
        name: call.tool,
        arguments: JSON.stringify({ ...call.input, security_risk: 'low' }),
      })),
      ...tokens,
    };
  const toolCalls = Array.from({ length: task.parallel ?? 1 }, (_, index) => ({
    id: `call_${task.id}_${step}_${index}`,
    ...(task.calls?.[step]
      ? {
          name: task.calls[step]!.tool,
          arguments: JSON.stringify({ ...task.calls[step]!.input, security_risk: 'low' }),
        }
      : task.commands
        ? {
            name: 'terminal',
            arguments: JSON.stringify({ command: task.commands[step] ?? 'true', security_risk: 'low' }),
          }
        : task.tool === 'think'
          ? {
              name: 'think',
              arguments: JSON.stringify({
                thought: `Step ${step}.${index} of ${task.id}: plan the next move.`,
                security_risk: 'low',
              }),
            }
          : {
              name: 'terminal',
              arguments: JSON.stringify({
                command: `sleep ${task.sleep ?? 0}; echo "${task.id} ${step} ${index}" >> ${task.effects}`,
                security_risk: 'low',
              }),
            }),
  }));
  return { toolCalls, ...tokens };
}

/** What a hostile model answers at its `turn`-th turn (its ids never count as progress). */
function hostileReply(
  task: BrainTask,
  hostile: 'invalid_tool_calls' | 'text_tool_calls',
  turn: number,
): ReturnType<typeof brainReply> {
  const tokens = { promptTokens: 100 + turn * 20, completionTokens: 20 };
  const command = `echo "${task.id} ${turn}" >> ${task.effects}`;
  if (hostile === 'invalid_tool_calls') {
    const calls = [
      { name: 'no_such_tool', arguments: JSON.stringify({ command }) },
      { name: 'terminal', arguments: '{"command": "ls -la' },
      { name: 'terminal', arguments: JSON.stringify({ command: 42 }) },
    ];
    return { toolCalls: [{ id: `bad_${task.id}_${turn}`, ...calls[turn % calls.length]! }], ...tokens };
  }
  const texts = [
    `<function=terminal>\n<parameter=command>\n${command}\n</parameter>\n</function>`,
    JSON.stringify({ tool: 'terminal', arguments: { command } }),
    `I will run it.\n<tool_call>\n${JSON.stringify({ name: 'terminal', arguments: { command } })}\n</tool_call>`,
  ];
  return { text: texts[turn % texts.length]!, ...tokens };
}

/** A reply that never ends: content chunks (SSE) or an unterminated JSON body, as fast as the client reads, until it closes the connection. */
async function streamForever(response: ServerResponse, id: string, stream: boolean): Promise<void> {
  response.writeHead(200, { 'content-type': stream ? 'text/event-stream' : 'application/json' });
  response.flushHeaders();
  const piece = 'all work and no play makes jack a dull boy. '.repeat(100);
  const chunk = stream
    ? `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 0, model: 'brain', choices: [{ index: 0, delta: { content: piece }, finish_reason: null }] })}\n\n`
    : piece;
  response.write(
    stream
      ? `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 0, model: 'brain', choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] })}\n\n`
      : `{"id":"${id}","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"`,
  );
  while (!response.destroyed) {
    if (!response.write(chunk)) {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          response.off('drain', done).off('close', done);
          resolve();
        };
        response.on('drain', done).on('close', done);
      });
    }
  }
}

/** Steps done: one past the highest step whose results came back, or what a summary recorded. */
function progressOf(messages: readonly ChatMessage[], task: string): number {
  let done = 0;
  const callId = new RegExp(`^call_${task}_(\\d+)_`);
  for (const message of messages) {
    if (message.role === 'tool') {
      const match = callId.exec(String((message as { tool_call_id?: string }).tool_call_id ?? ''));
      if (match) done = Math.max(done, Number(match[1]) + 1);
    } else if (message.role === 'user') {
      done = Math.max(done, progressIn(JSON.stringify(message.content ?? ''), task));
    }
  }
  return done;
}

/** Progress visible anywhere in a text: PROGRESS=<n> markers and tool call ids. */
export function progressIn(text: string, task: string): number {
  let done = 0;
  for (const match of text.matchAll(/PROGRESS=(\d+)/g)) done = Math.max(done, Number(match[1]));
  for (const match of text.matchAll(new RegExp(`call_${task}_(\\d+)_`, 'g')))
    done = Math.max(done, Number(match[1]) + 1);
  return done;
}

function findTask(messages: readonly ChatMessage[]): BrainTask | undefined {
  for (const message of messages) {
    if (message.role !== 'user') continue;
    const text =
      typeof message.content === 'string'
        ? message.content
        : Array.isArray(message.content)
          ? message.content.map((part: { text?: string }) => part.text ?? '').join('')
          : '';
    const match = /TASK (\{.*\})/s.exec(text);
    if (match) return JSON.parse(match[1]!) as BrainTask;
  }
  return undefined;
}
