import type { ServerResponse } from 'node:http';

/** The assistant message of a reply: tool calls and no text, or text. */
export type ChatReplyMessage =
  | {
      readonly content: null;
      readonly tool_calls: readonly {
        readonly id: string;
        readonly type: string;
        readonly function: { readonly name: string; readonly arguments: string };
      }[];
    }
  | { readonly content: string | undefined; readonly tool_calls: undefined };

/** A reply to stream, and how slowly: `pieces` content chunks before it, `delayMs` apart. */
export type StreamedReply = {
  readonly id: string;
  readonly model: string;
  readonly reply: ChatReplyMessage;
  readonly finish: string;
  readonly usage: { readonly prompt_tokens: number; readonly completion_tokens: number; readonly total_tokens: number };
  readonly pieces: number;
  readonly delayMs: number | undefined;
};

/**
 * Writes the reply as Chat Completions chunks (SSE): the role, `pieces` filler chunks (a slow
 * stream, for interrupt tests), each tool call's name then its arguments (or the text), the
 * finish reason, the usage and `[DONE]`. False when the client closed the connection first.
 */
export async function streamReply(response: ServerResponse, streamed: StreamedReply): Promise<boolean> {
  const { id, model, reply, finish, usage, pieces, delayMs } = streamed;
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
      model,
      choices: [{ index: 0, delta, finish_reason: finishReason }],
    };
    response.write(`data: ${JSON.stringify(chunk)}\n\n`);
  };
  send({ role: 'assistant', content: '' });
  for (let piece = 0; piece < pieces; piece += 1) {
    if (response.destroyed) return false;
    if (delayMs) await new Promise((resolve) => setTimeout(resolve, delayMs));
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
    `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 0, model, choices: [], usage })}\n\n`,
  );
  response.write('data: [DONE]\n\n');
  response.end();
  return true;
}

/** A reply that never ends: content chunks (SSE) or an unterminated JSON body, as fast as the client reads, until it closes the connection. */
export async function streamForever(response: ServerResponse, id: string, stream: boolean): Promise<void> {
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
