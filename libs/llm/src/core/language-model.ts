import type { AssistantMessage, ChatMessage, Reasoning, TextPart, ToolCall, ToolSchema } from '../messages.js';

export const LlmProvider = {
  openaiChat: 'openai-chat',
  openaiResponses: 'openai-responses',
  anthropic: 'anthropic',
} as const;
export type LlmProvider = (typeof LlmProvider)[keyof typeof LlmProvider];

export const FinishReason = {
  stop: 'stop',
  toolCalls: 'tool_calls',
  length: 'length',
  contentFilter: 'content_filter',
  other: 'other',
} as const;
export type FinishReason = (typeof FinishReason)[keyof typeof FinishReason];

export type ModelInfo = {
  readonly provider: LlmProvider | 'scripted';
  readonly model: string;
  readonly nativeToolCalling: boolean;
  /** The model takes images; undefined is true. */
  readonly vision?: boolean;
  readonly contextWindow?: number;
  readonly maxInputTokens?: number;
  readonly maxOutputTokens?: number;
};

export type GenerateRequest = {
  readonly messages: readonly ChatMessage[];
  readonly tools?: readonly ToolSchema[];
  /** Overrides the configured prompt cache key for this call (e.g. a sub-agent sharing its parent's). */
  readonly promptCacheKey?: string;
  readonly maxOutputTokens?: number;
  readonly temperature?: number;
};

/** Token counts of one call. `inputTokens` includes cached (read and written) prompt tokens. */
export type Usage = {
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cacheReadTokens: number;
  readonly cacheWriteTokens: number;
  /** Part of `outputTokens` spent on reasoning, when the provider reports it. */
  readonly reasoningTokens: number;
};

export type StreamDelta =
  | { readonly type: 'text'; readonly text: string }
  | { readonly type: 'reasoning'; readonly text: string }
  | {
      readonly type: 'tool_call';
      /** Position of the call within this response. */
      readonly index: number;
      readonly id?: string;
      readonly name?: string;
      readonly argumentsDelta: string;
    }
  /** A retry started after deltas were emitted: discard what this call streamed so far. */
  | { readonly type: 'restart'; readonly attempt: number };

export type GenerateResult = {
  readonly content: readonly TextPart[];
  /** Tool calls of this response; parallel calls share `responseId`. */
  readonly toolCalls: readonly ToolCall[];
  readonly reasoning?: Reasoning;
  readonly responseId: string;
  readonly model: string;
  readonly finishReason: FinishReason;
  /** The provider's own finish/stop reason, for diagnostics. */
  readonly rawFinishReason?: string;
  readonly usage: Usage;
  /** Cost in US dollars from the configured prices; undefined when no prices are configured. */
  readonly costUsd?: number;
  readonly latencyMs: number;
  readonly attempts: number;
  /** The fallback that made the call, when the model's own provider was out (`withFallbacks`); absent when the model itself made it. */
  readonly fallback?: ModelFallback;
};

/** A model as a caller names it: its provider and model, and the operator's profile it is, when it is one. */
export type ModelName = {
  readonly provider: ModelInfo['provider'];
  readonly model: string;
  readonly profile?: string;
};

/** Which of a model's fallbacks made a call: its index among them (0 for the first) and its name. */
export type ModelFallback = ModelName & { readonly index: number };

export type GenerateOptions = {
  readonly signal?: AbortSignal;
  /** Receives token deltas; providing it makes the call stream. */
  readonly onDelta?: (delta: StreamDelta) => void;
  /** Force streaming on or off; defaults to streaming exactly when `onDelta` is given. */
  readonly stream?: boolean;
};

/** The single, provider-neutral model boundary. */
export interface LanguageModel {
  readonly info: ModelInfo;
  generate(request: GenerateRequest, options?: GenerateOptions): Promise<GenerateResult>;
}

export const emptyUsage: Usage = {
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
};

/** The assistant message to append to the history so the response replays on the next call. */
export function toAssistantMessage(result: GenerateResult): AssistantMessage {
  return {
    role: 'assistant',
    content: result.content,
    toolCalls: result.toolCalls,
    responseId: result.responseId,
    ...(result.reasoning ? { reasoning: result.reasoning } : {}),
  };
}
