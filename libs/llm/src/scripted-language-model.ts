import { sleep, throwIfCancelled } from './core/abort.js';
import {
  emptyUsage,
  type FinishReason,
  type GenerateOptions,
  type GenerateRequest,
  type GenerateResult,
  type LanguageModel,
  type ModelInfo,
  type StreamDelta,
  type Usage,
} from './core/language-model.js';
import type { Reasoning, ToolCall } from './messages.js';

/** One scripted reply: a result (every field optional) or an error to throw. */
export type ScriptedReply =
  | {
      readonly text?: string;
      readonly toolCalls?: readonly ToolCall[];
      readonly reasoning?: Reasoning;
      readonly finishReason?: FinishReason;
      readonly usage?: Partial<Usage>;
      readonly responseId?: string;
      readonly costUsd?: number;
    }
  | Error;

export type ScriptedLanguageModelOptions = {
  /** Replies in order, or a function of the request and its 0-based call index. */
  readonly replies:
    readonly ScriptedReply[] | ((request: GenerateRequest, index: number) => ScriptedReply | Promise<ScriptedReply>);
  /** Artificial latency per call, in ms (or a function of the request); aborting the signal cancels the wait. */
  readonly latencyMs?: number | ((request: GenerateRequest) => number);
  readonly info?: Partial<ModelInfo>;
  /** Keep every request in `requests` (default true); a long-running model (a benchmark's) keeps none. */
  readonly record?: boolean;
};

/** A deterministic LanguageModel for tests: scripted replies, recorded requests, optional deltas. */
export class ScriptedLanguageModel implements LanguageModel {
  readonly info: ModelInfo;
  /** Every request received, in order (none when `record` is false). */
  readonly requests: GenerateRequest[] = [];
  readonly #options: ScriptedLanguageModelOptions;
  #calls = 0;

  constructor(options: ScriptedLanguageModelOptions) {
    this.#options = options;
    this.info = { provider: 'scripted', model: 'scripted', nativeToolCalling: true, ...options.info };
  }

  async generate(request: GenerateRequest, options: GenerateOptions = {}): Promise<GenerateResult> {
    throwIfCancelled(options.signal);
    const index = this.#calls;
    this.#calls += 1;
    if (this.#options.record !== false) this.requests.push(request);
    const started = performance.now();
    const reply = await this.#reply(request, index);
    const latencyMs =
      typeof this.#options.latencyMs === 'function' ? this.#options.latencyMs(request) : this.#options.latencyMs;
    if (latencyMs) await sleep(latencyMs, options.signal);
    throwIfCancelled(options.signal);
    if (reply instanceof Error) throw reply;
    const responseId = reply.responseId ?? `scripted-${index + 1}`;
    const toolCalls = reply.toolCalls ?? [];
    if (options.onDelta) emitDeltas(reply.text ?? '', reply.reasoning?.text, toolCalls, options.onDelta);
    return {
      content: reply.text ? [{ type: 'text', text: reply.text }] : [],
      toolCalls,
      ...(reply.reasoning ? { reasoning: reply.reasoning } : {}),
      responseId,
      model: this.info.model,
      finishReason: reply.finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop'),
      usage: { ...emptyUsage, ...reply.usage },
      ...(reply.costUsd === undefined ? {} : { costUsd: reply.costUsd }),
      latencyMs: Math.round(performance.now() - started),
      attempts: 1,
    };
  }

  async #reply(request: GenerateRequest, index: number): Promise<ScriptedReply> {
    const { replies } = this.#options;
    if (typeof replies === 'function') return replies(request, index);
    const reply = replies[index];
    if (reply === undefined)
      throw new Error(`ScriptedLanguageModel has ${replies.length} replies; call ${index + 1} has none.`);
    return reply;
  }
}

function emitDeltas(
  text: string,
  reasoning: string | undefined,
  toolCalls: readonly ToolCall[],
  onDelta: (delta: StreamDelta) => void,
): void {
  if (reasoning) onDelta({ type: 'reasoning', text: reasoning });
  for (const piece of text.match(/\S+\s*|\s+/g) ?? []) onDelta({ type: 'text', text: piece });
  toolCalls.forEach((call, index) => {
    onDelta({ type: 'tool_call', index, id: call.id, name: call.name, argumentsDelta: '' });
    onDelta({ type: 'tool_call', index, argumentsDelta: call.arguments });
  });
}
