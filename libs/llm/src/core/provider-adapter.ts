import type { ChatMessage, TextPart, ToolSchema } from '../messages.js';
import type { GenerateResult, StreamDelta } from './language-model.js';

/** What one provider attempt receives after the managed layer resolved defaults and fallbacks. */
export type ProviderRequest = {
  readonly messages: readonly ChatMessage[];
  readonly tools: readonly ToolSchema[];
  readonly promptCacheKey?: string;
  readonly maxOutputTokens?: number;
  readonly temperature?: number;
};

export type ProviderCallContext = {
  readonly signal: AbortSignal;
  readonly stream: boolean;
  readonly onDelta?: (delta: StreamDelta) => void;
};

/** One response, before latency, cost and attempts are added. */
export type ProviderResult = Omit<GenerateResult, 'costUsd' | 'latencyMs' | 'attempts'>;

/** One wire protocol: translate, send once, translate back. No retries, no timeouts. */
export interface ProviderAdapter {
  readonly name: string;
  call(request: ProviderRequest, context: ProviderCallContext): Promise<ProviderResult>;
}

export function textContent(text: string): TextPart[] {
  return text.length > 0 ? [{ type: 'text', text }] : [];
}

export function joinText(parts: readonly { readonly type: string; readonly text?: string }[]): string {
  return parts
    .filter((part): part is { type: 'text'; text: string } => part.type === 'text' && typeof part.text === 'string')
    .map((part) => part.text)
    .join('\n');
}
