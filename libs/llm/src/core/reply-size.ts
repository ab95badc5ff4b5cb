import { LlmError } from './errors.js';
import type { StreamDelta } from './language-model.js';
import type { ProviderResult } from './provider-adapter.js';

/**
 * The one bound on how large a model's reply may grow, for every provider: the characters of its
 * text, reasoning and tool calls (names and arguments). A stream is counted as its deltas arrive,
 * so a reply that never ends fails as soon as it passes the bound (the attempt's connection is
 * closed) instead of growing until the timeout; a whole (non-streamed) result is measured the same
 * way. Past the bound the call fails with `reply_too_large`, which is not retried: a model that ran
 * away once is likely to again, and every attempt costs the whole bound in output.
 */
export class ReplySizeLimit {
  readonly #maxChars: number;
  readonly #provider: string;
  #chars = 0;

  constructor(maxChars: number, provider: string) {
    this.#maxChars = maxChars;
    this.#provider = provider;
  }

  /** Counts one streamed delta; throws `reply_too_large` once the reply so far is past the bound. */
  count(delta: StreamDelta): void {
    this.#chars += deltaChars(delta);
    if (this.#chars > this.#maxChars) throw replyTooLarge(this.#provider, this.#maxChars, 'streamed');
  }

  /** Measures a whole result; throws `reply_too_large` when it is past the bound. */
  check(result: ProviderResult): void {
    if (resultChars(result) > this.#maxChars) throw replyTooLarge(this.#provider, this.#maxChars, 'returned');
  }
}

function deltaChars(delta: StreamDelta): number {
  switch (delta.type) {
    case 'text':
    case 'reasoning':
      return delta.text.length;
    case 'tool_call':
      // at least one per fragment: a stream of empty fragments still grows the reply's calls
      return Math.max(1, (delta.id?.length ?? 0) + (delta.name?.length ?? 0) + delta.argumentsDelta.length);
    case 'restart':
      return 0;
  }
}

function resultChars(result: ProviderResult): number {
  let chars = 0;
  for (const part of result.content) chars += part.text.length;
  chars += result.reasoning?.text?.length ?? 0;
  for (const block of result.reasoning?.thinkingBlocks ?? [])
    chars += block.type === 'thinking' ? block.thinking.length : block.data.length;
  for (const call of result.toolCalls) chars += call.id.length + call.name.length + call.arguments.length;
  return chars;
}

function replyTooLarge(provider: string, maxChars: number, how: 'streamed' | 'returned'): LlmError {
  return new LlmError(
    'reply_too_large',
    `${provider} ${how} a reply of more than ${maxChars} characters (llm.maxReplyChars); the call was stopped. ` +
      'A model that does not stop (a repetition loop, a server ignoring the output limit) ends here: set llm.maxOutputTokens so the provider stops it, or raise llm.maxReplyChars.',
    { provider },
  );
}
