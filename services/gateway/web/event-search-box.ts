import type { Event } from '@flotilla/events';
import type { FlotillaClient } from '@flotilla/client';
import { byId, h, show } from './dom.js';
import { clockTime } from './format.js';

export type EventSearchHooks = {
  /** A request failed: tell the user. */
  onError(error: unknown): void;
};

/** Results shown at most (the newest first); the API's search pages further. */
const MAX_RESULTS = 50;

/**
 * The open conversation's event search: the text typed is looked for by the gateway's event
 * search (`GET …/events?text=`, a case-insensitive substring of each event's JSON), and each
 * result, newest first, jumps to its event in the stream (highlighted) when chosen.
 */
export class EventSearchBox {
  readonly #form = byId<HTMLFormElement>('event-search');
  readonly #input = byId<HTMLInputElement>('event-search-input');
  readonly #results = byId<HTMLUListElement>('event-search-results');
  readonly #note = byId('event-search-note');
  #id: string | undefined;
  /** Answers for an earlier search or conversation are dropped. */
  #generation = 0;

  constructor(
    readonly client: () => FlotillaClient,
    readonly stream: HTMLElement,
    readonly hooks: EventSearchHooks,
  ) {
    this.#form.addEventListener('submit', (event) => {
      event.preventDefault();
      void this.#search(this.#input.value.trim());
    });
    this.#input.addEventListener('keydown', (event) => {
      if (event.key === 'Escape') this.clear();
    });
  }

  open(id: string): void {
    this.#id = id;
    this.clear();
  }

  clear(): void {
    this.#generation += 1;
    this.#input.value = '';
    this.#results.replaceChildren();
    show(this.#results, false);
    show(this.#note, false);
  }

  async #search(text: string): Promise<void> {
    const id = this.#id;
    const generation = ++this.#generation;
    if (!id || text === '') {
      this.clear();
      return;
    }
    try {
      const page = await this.client().searchEvents(id, { text, order: 'desc', limit: MAX_RESULTS });
      if (generation !== this.#generation) return;
      this.#results.replaceChildren(...page.items.map((event) => this.#result(event)));
      show(this.#results, page.items.length > 0);
      this.#note.textContent =
        page.items.length === 0
          ? `No event holds “${text}”.`
          : page.items.length === 1 && !page.next_cursor
            ? `1 event holds “${text}”.`
            : `${page.items.length}${page.next_cursor ? '+' : ''} events hold “${text}”, newest first.`;
      show(this.#note, true);
    } catch (error) {
      if (generation === this.#generation) this.hooks.onError(error);
    }
  }

  #result(event: Event): HTMLLIElement {
    const button = h(
      'button',
      { type: 'button', class: 'link-button', 'data-testid': 'event-search-result', 'data-seq': event.seq },
      `#${event.seq} ${event.type.replaceAll('_', ' ')} · ${clockTime(event.timestamp)}`,
    );
    button.addEventListener('click', () => this.#reveal(event.seq));
    return h('li', {}, button);
  }

  /** Scrolls the stream to the event and marks it for a moment. */
  #reveal(seq: number): void {
    const item = this.stream.querySelector<HTMLElement>(`[data-testid="event"][data-seq="${seq}"]`);
    if (!item) return;
    item.scrollIntoView({ block: 'center' });
    for (const marked of this.stream.querySelectorAll('.event.found')) marked.classList.remove('found');
    item.classList.add('found');
  }
}
