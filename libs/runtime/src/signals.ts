import type { ConversationRef } from '@flotilla/log';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { StreamDelta } from '@flotilla/llm';
import { whenAborted } from './when-aborted.js';

/**
 * Core-NATS subjects for traffic that is never stored: interrupts (broadcast to every process)
 * and token deltas (for live viewers). `<root>.interrupt.<tenant>.<conversation>`,
 * `<root>.delta.<tenant>.<conversation>`.
 */
import { DEFAULT_SIGNAL_ROOT } from '@flotilla/bus';

export { DEFAULT_SIGNAL_ROOT };

export function interruptSubject(root: string, ref: ConversationRef): string {
  return `${root}.interrupt.${ref.tenant}.${ref.conversation}`;
}

export function deltaSubject(root: string, ref: ConversationRef): string {
  return `${root}.delta.${ref.tenant}.${ref.conversation}`;
}

/**
 * Broadcast an interrupt to every process (call after appending the interrupt event). `at` is the
 * stream sequence of the commit holding it: work decided at that commit or later (a step the
 * commit itself woke, when the run goes on) is not stopped; without it everything is.
 */
export function publishInterrupt(
  nc: NatsConnection,
  ref: ConversationRef,
  at?: number,
  root = DEFAULT_SIGNAL_ROOT,
): void {
  nc.publish(
    interruptSubject(root, ref),
    JSON.stringify({ tenant: ref.tenant, conversation: ref.conversation, ...(at === undefined ? {} : { at }) }),
  );
}

/**
 * Token deltas of an in-flight LLM call, for live viewers. Best effort: never stored, and never
 * an error for the step (a delta past the server's payload limit, or a closed connection, is
 * dropped: the reply's events carry the whole text anyway).
 */
export function publishDelta(
  nc: NatsConnection,
  ref: ConversationRef,
  delta: StreamDelta,
  root = DEFAULT_SIGNAL_ROOT,
): void {
  try {
    nc.publish(deltaSubject(root, ref), JSON.stringify(delta));
  } catch {
    // dropped, as the docstring says
  }
}

/**
 * Cancels in-flight work of a conversation in this process when an interrupt arrives from any
 * process. Register work with `track`; the returned signal aborts on interrupt.
 */
export class InterruptRegistry {
  /** Each tracked piece of work, with the stream sequence of the commit it was decided at (-Infinity: unknown, always stopped). */
  readonly #controllers = new Map<string, Map<AbortController, number>>();
  #subscription: Subscription | undefined;

  /** Follows interrupts from every process; `onError` hears of a subscription the server refused (the credential lacks it). */
  listen(nc: NatsConnection, root = DEFAULT_SIGNAL_ROOT, onError?: (error: Error) => void): void {
    this.#subscription = nc.subscribe(`${root}.interrupt.*.*`, {
      callback: (error, message) => {
        if (error) {
          onError?.(error);
          return;
        }
        const tokens = message.subject.split('.');
        const tenant = tokens.at(-2);
        const conversation = tokens.at(-1);
        if (tenant && conversation) this.interrupt({ tenant, conversation }, interruptAt(message.data));
      },
    });
  }

  /** Work for the conversation, decided at the commit of stream sequence `decidedAt` when known: its signal aborts on an interrupt appended after that commit. */
  track(
    ref: ConversationRef,
    parent?: AbortSignal,
    decidedAt = Number.NEGATIVE_INFINITY,
  ): { signal: AbortSignal; done(): void } {
    const key = `${ref.tenant}.${ref.conversation}`;
    const controller = new AbortController();
    const unfollow = parent ? whenAborted(parent, () => controller.abort(parent.reason)) : undefined;
    let set = this.#controllers.get(key);
    if (!set) this.#controllers.set(key, (set = new Map()));
    set.set(controller, decidedAt);
    return {
      signal: controller.signal,
      done: () => {
        unfollow?.();
        set.delete(controller);
        if (set.size === 0) this.#controllers.delete(key);
      },
    };
  }

  /**
   * Abort what this process is doing for the conversation: everything, or with `at` (the stream
   * sequence of the interrupt's commit) the work decided before that commit. Returns how many were aborted.
   */
  interrupt(ref: ConversationRef, at = Number.POSITIVE_INFINITY): number {
    const set = this.#controllers.get(`${ref.tenant}.${ref.conversation}`);
    if (!set) return 0;
    let aborted = 0;
    for (const [controller, decidedAt] of set) {
      if (decidedAt >= at) continue;
      controller.abort(new Error('interrupted'));
      aborted += 1;
    }
    return aborted;
  }

  close(): void {
    this.#subscription?.unsubscribe();
  }
}

/** The stream sequence an interrupt message names (`at`), or undefined (stop everything) when it names none or is not such a message. */
function interruptAt(data: Uint8Array): number | undefined {
  try {
    const at = (JSON.parse(new TextDecoder().decode(data)) as { at?: unknown }).at;
    return typeof at === 'number' && Number.isSafeInteger(at) && at > 0 ? at : undefined;
  } catch {
    return undefined;
  }
}
