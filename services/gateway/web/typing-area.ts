import type { DeltaFrame } from '@flotilla/api';
import { h, show } from './dom.js';

/** Deltas kept per kind; older text scrolls out (the durable event brings the whole of it). */
const MAX_CHARS = 6_000;

/**
 * Token deltas of the LLM call in flight, shown as the agent "typing": reasoning, reply text
 * and tool-call arguments as they stream. Cleared when the durable event arrives.
 */
export class TypingArea {
  #parts: { kind: Exclude<DeltaFrame['kind'], 'restart'>; text: string }[] = [];

  constructor(
    readonly container: HTMLElement,
    readonly body: HTMLElement,
  ) {}

  add(delta: DeltaFrame): void {
    // the LLM call is being retried: what it streamed so far is void
    if (delta.kind === 'restart') return this.clear();
    if (delta.text === '') return;
    const last = this.#parts.at(-1);
    if (last && last.kind === delta.kind) last.text = (last.text + delta.text).slice(-MAX_CHARS);
    else this.#parts.push({ kind: delta.kind, text: delta.text.slice(-MAX_CHARS) });
    this.#render();
  }

  clear(): void {
    if (this.#parts.length === 0 && this.container.hidden) return;
    this.#parts = [];
    this.#render();
  }

  #render(): void {
    show(this.container, this.#parts.length > 0);
    this.body.replaceChildren(
      ...this.#parts.map((part) =>
        part.kind === 'tool_call'
          ? h('pre', { class: 'code typing-tool' }, part.text)
          : h('div', { class: part.kind === 'reasoning' ? 'typing-reasoning' : 'text' }, part.text),
      ),
    );
  }
}
