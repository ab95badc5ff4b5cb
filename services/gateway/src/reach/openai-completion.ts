// The answer's shapes as OpenAI's Chat Completions API gives them: a completion, the chunks of a
// streamed one, and the usage (the run's model calls, as the conversation's usage counts them).
import type { Usage } from '@flotilla/api';

export type CompletionUsage = {
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  readonly total_tokens: number;
  readonly prompt_tokens_details: { readonly cached_tokens: number };
  readonly completion_tokens_details: { readonly reasoning_tokens: number };
};

/** What every completion and chunk of one answer shares. */
export type CompletionHead = {
  /** `chatcmpl-<conversation id>`. */
  readonly id: string;
  /** Unix seconds the request started its run. */
  readonly created: number;
  /** The request's `model`, as it named it. */
  readonly model: string;
};

export const completionId = (conversation: string): string => `chatcmpl-${conversation}`;

/** The usage of the run: the conversation's usage now, less what it had used before (nothing for a new one). */
export function usageOfRun(after: Usage, before?: Usage): CompletionUsage {
  const spent = (field: keyof Usage): number => Math.max(0, after[field] - (before?.[field] ?? 0));
  const prompt = spent('prompt_tokens');
  const completion = spent('completion_tokens');
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: spent('cache_read_tokens') },
    completion_tokens_details: { reasoning_tokens: spent('reasoning_tokens') },
  };
}

/** A whole answer (`chat.completion`). */
export function completionOf(head: CompletionHead, text: string, usage: CompletionUsage) {
  return {
    ...head,
    object: 'chat.completion' as const,
    choices: [
      {
        index: 0,
        message: { role: 'assistant' as const, content: text, refusal: null },
        logprobs: null,
        finish_reason: 'stop' as const,
      },
    ],
    usage,
  };
}

/** One chunk of a streamed answer (`chat.completion.chunk`); `usage` is null on each but the last with include_usage. */
export function chunkOf(
  head: CompletionHead,
  delta: { readonly role?: 'assistant'; readonly content?: string },
  finishReason: 'stop' | null,
  includeUsage: boolean,
) {
  return {
    ...head,
    object: 'chat.completion.chunk' as const,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    ...(includeUsage ? { usage: null } : {}),
  };
}

/** The last chunk with include_usage: no choices, the usage. */
export function usageChunkOf(head: CompletionHead, usage: CompletionUsage) {
  return { ...head, object: 'chat.completion.chunk' as const, choices: [], usage };
}
