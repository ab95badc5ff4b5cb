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

/** Broadcast an interrupt to every process (call after appending the interrupt event). */
export function publishInterrupt(nc: NatsConnection, ref: ConversationRef, root = DEFAULT_SIGNAL_ROOT): void {
  nc.publish(interruptSubject(root, ref), JSON.stringify({ tenant: ref.tenant, conversation: ref.conversation }));
}

/**
 * Token deltas of an in-flight LLM call, for live viewers. Best effort: never stored, and never
 * an error for the step (a delta past the server's payload limit, or a closed connection, is
 * dropped: the reply's events carry the whole text anyway).
 */
export function publishDelta(nc: NatsConnection, ref: ConversationRef, delta: StreamDelta, root = DEFAULT_SIGNAL_ROOT): void {
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
  readonly #controllers = new Map<string, Set<AbortController>>();
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
        if (tenant && conversation) this.interrupt({ tenant, conversation });
      },
    });
  }

  track(ref: ConversationRef, parent?: AbortSignal): { signal: AbortSignal; done(): void } {
    const key = `${ref.tenant}.${ref.conversation}`;
    const controller = new AbortController();
    const unfollow = parent ? whenAborted(parent, () => controller.abort(parent.reason)) : undefined;
    let set = this.#controllers.get(key);
    if (!set) this.#controllers.set(key, (set = new Set()));
    set.add(controller);
    return {
      signal: controller.signal,
      done: () => {
        unfollow?.();
        set.delete(controller);
        if (set.size === 0) this.#controllers.delete(key);
      },
    };
  }

  /** Abort everything this process is doing for the conversation. Returns how many were aborted. */
  interrupt(ref: ConversationRef): number {
    const set = this.#controllers.get(`${ref.tenant}.${ref.conversation}`);
    if (!set) return 0;
    for (const controller of set) controller.abort(new Error('interrupted'));
    return set.size;
  }

  close(): void {
    this.#subscription?.unsubscribe();
  }
}
