import type { Conversation, EventPage, ServerFrame } from '@flotilla/api';
import type { SubscribeOptions } from '@flotilla/client';
import type { Event } from '@flotilla/events';
import type { CliClient } from '../cli-client.js';
import type { Output } from '../terminal.js';

type Step = ServerFrame | { type: 'close'; code: number; reason: string } | { type: 'wait'; ms: number };

/**
 * A stand-in for the gateway's event stream: `subscribe` plays the given frames (asynchronously,
 * in order) into the subscription's callbacks, as EventSubscription would.
 */
export class FakeStream {
  options: SubscribeOptions | undefined;
  closed = false;
  subscribedId: string | undefined;

  constructor(
    readonly steps: readonly Step[],
    readonly log: readonly Event[] = [],
  ) {}

  readonly client = {
    getConversation: async (id: string): Promise<Conversation> => ({ id }) as Conversation,
    searchEvents: async (): Promise<EventPage> => ({
      items: [...this.log].reverse(),
      next_cursor: null,
      prev_cursor: null,
    }),
    subscribe: (id: string, options: SubscribeOptions = {}) => {
      this.subscribedId = id;
      this.options = options;
      void this.#play(options);
      return { close: () => this.#close() };
    },
  } satisfies Pick<CliClient, 'getConversation' | 'searchEvents' | 'subscribe'>;

  #close(): void {
    if (this.closed) return;
    this.closed = true;
    this.options?.onClose?.({ code: 1000, reason: 'closed by the client', fatal: false });
  }

  async #play(options: SubscribeOptions): Promise<void> {
    for (const step of this.steps) {
      await new Promise((resolve) => setTimeout(resolve, step.type === 'wait' ? step.ms : 0));
      if (this.closed) return;
      switch (step.type) {
        case 'sync':
          options.onSync?.(step);
          break;
        case 'event':
          options.onEvent?.(step.event);
          break;
        case 'live':
          options.onLive?.(step.last_seq);
          break;
        case 'delta':
          options.onDelta?.(step);
          break;
        case 'close':
          this.closed = true;
          options.onClose?.({ code: step.code, reason: step.reason, fatal: true });
          break;
        default:
          break;
      }
    }
  }
}

export const eventFrame = (event: Event): ServerFrame => ({ type: 'event', seq: event.seq, event });

/** Collects what is written; `isTTY` as given. */
export class Captured implements Output {
  text = '';
  constructor(readonly isTTY = false) {}
  write(text: string): boolean {
    this.text += text;
    return true;
  }
  get lines(): string[] {
    return this.text.split('\n').slice(0, -1);
  }
}
