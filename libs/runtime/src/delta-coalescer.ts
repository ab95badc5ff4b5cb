import type { StreamDelta } from '@flotilla/llm';

/**
 * Merges a model call's token deltas before they are published: consecutive text (or reasoning)
 * deltas become one, as do consecutive argument fragments of the same tool call. What is pending
 * goes out `intervalMs` after it started, when a delta cannot join it, and at `flush()` (the end of
 * the call). Viewers get the same text, at most `intervalMs` later, in a fraction of the messages:
 * a model streaming a token every few milliseconds no longer costs a publish per token.
 * A `restart` is never merged or delayed.
 */
export class DeltaCoalescer {
  #pending: StreamDelta | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly publish: (delta: StreamDelta) => void,
    private readonly intervalMs = 30,
  ) {}

  push(delta: StreamDelta): void {
    const merged = this.#pending && merge(this.#pending, delta);
    if (merged) {
      this.#pending = merged;
      return;
    }
    this.flush();
    if (delta.type === 'restart' || this.intervalMs <= 0) {
      this.publish(delta);
      return;
    }
    this.#pending = delta;
    this.#timer = setTimeout(() => this.flush(), this.intervalMs);
  }

  /** Publishes what is pending now. */
  flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const pending = this.#pending;
    this.#pending = undefined;
    if (pending) this.publish(pending);
  }
}

function merge(pending: StreamDelta, next: StreamDelta): StreamDelta | undefined {
  if ((pending.type === 'text' || pending.type === 'reasoning') && next.type === pending.type)
    return { type: pending.type, text: pending.text + next.text };
  if (
    pending.type === 'tool_call' &&
    next.type === 'tool_call' &&
    next.index === pending.index &&
    next.id === undefined &&
    next.name === undefined
  ) {
    return { ...pending, argumentsDelta: pending.argumentsDelta + next.argumentsDelta };
  }
  return undefined;
}
