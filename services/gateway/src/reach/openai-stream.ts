// A streamed answer as OpenAI streams one: server-sent events, each `data: <chat.completion.chunk>`,
// the first with the assistant's role, then the answer's text, a chunk with the finish reason, the
// usage when asked (`stream_options.include_usage`) and `data: [DONE]`; an error after the head is
// `data: {"error": …}` (OpenAI's SDKs throw it).
import type { FastifyReply } from 'fastify';
import { chunkOf, usageChunkOf, type CompletionHead, type CompletionUsage } from './openai-completion.js';
import type { OpenAiError } from './openai-errors.js';

/** A comment line now and then, so proxies keep a quiet stream (the agent may work for minutes) open. */
const KEEP_ALIVE_MS = 15_000;

export class CompletionStream {
  readonly #reply: FastifyReply;
  readonly #head: CompletionHead;
  readonly #includeUsage: boolean;
  readonly #keepAlive: NodeJS.Timeout;

  /** Takes the reply over and sends the head and the role's chunk. */
  constructor(
    reply: FastifyReply,
    head: CompletionHead,
    options: { includeUsage: boolean; headers: Record<string, string> },
  ) {
    this.#reply = reply;
    this.#head = head;
    this.#includeUsage = options.includeUsage;
    reply.hijack();
    reply.raw.writeHead(200, {
      ...options.headers,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
    });
    this.#data(chunkOf(head, { role: 'assistant', content: '' }, null, this.#includeUsage));
    this.#keepAlive = setInterval(() => this.#write(': keep-alive\n\n'), KEEP_ALIVE_MS);
  }

  /** The answer's text in `pieces`, the finish, the usage (when asked) and the end. */
  answer(pieces: readonly string[], usage: CompletionUsage): void {
    for (const content of pieces) this.#data(chunkOf(this.#head, { content }, null, this.#includeUsage));
    this.#data(chunkOf(this.#head, {}, 'stop', this.#includeUsage));
    if (this.#includeUsage) this.#data(usageChunkOf(this.#head, usage));
    this.#write('data: [DONE]\n\n');
    this.close();
  }

  /** The error in OpenAI's shape as the stream's last event. */
  fail(error: OpenAiError): void {
    this.#data(error.body());
    this.close();
  }

  close(): void {
    clearInterval(this.#keepAlive);
    if (!this.#reply.raw.writableEnded) this.#reply.raw.end();
  }

  #data(value: unknown): void {
    this.#write(`data: ${JSON.stringify(value)}\n\n`);
  }

  #write(text: string): void {
    if (!this.#reply.raw.writableEnded && !this.#reply.raw.destroyed) this.#reply.raw.write(text);
  }
}
