import type { Conversation } from '@flotilla/api';
import type { FlotillaClient } from '@flotilla/client';
import type { AgentChoice } from './agent-picker.js';
import { byId, h, show } from './dom.js';
import type { ConversationProgress } from './conversation-view.js';
import { count, relativeTime, statusBadge } from './format.js';

export type ConversationListHooks = {
  onSelect(conversation: Conversation): void;
  onError(error: unknown): void;
  /** The agent the form's user chose for a new conversation (a template, a model profile). */
  agentChoice(): AgentChoice;
};

/** How many conversations the sidebar shows (newest activity first). */
const PAGE = 100;
/** The list refreshes itself this often while the page is visible. */
const POLL_MS = 5_000;

/** The sidebar: the tenant's conversations with their status, and the new-conversation form. */
export class ConversationList {
  readonly #list = byId<HTMLUListElement>('conversation-list');
  readonly #note = byId('list-note');
  readonly #form = byId<HTMLFormElement>('new-conversation');
  readonly #titleInput = byId<HTMLInputElement>('new-title');
  readonly #messageInput = byId<HTMLTextAreaElement>('new-message');
  #conversations: Conversation[] = [];
  #selected: string | undefined;
  #live: { id: string; progress: ConversationProgress } | undefined;
  #loading: Promise<void> | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(
    /** The client of the current API key (it changes when the user connects with another). */
    readonly client: () => FlotillaClient,
    readonly hooks: ConversationListHooks,
  ) {
    byId('refresh').addEventListener(
      'click',
      () => void this.refresh().catch((error: unknown) => this.hooks.onError(error)),
    );
    this.#form.addEventListener('submit', (event) => {
      event.preventDefault();
      void this.#create((event.submitter as HTMLButtonElement | null)?.value === 'run');
    });
  }

  start(): void {
    this.stop();
    this.#timer = setInterval(() => {
      if (document.visibilityState === 'visible') void this.refresh().catch(() => undefined);
    }, POLL_MS);
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Reload the list (concurrent calls share one request). */
  refresh(): Promise<void> {
    this.#loading ??= this.client()
      .listConversations({ sort: '-updated_at', limit: PAGE })
      .then((page) => {
        this.#conversations = page.items;
        this.#applyLive();
        this.#note.textContent = page.next_cursor ? `Showing the ${PAGE} most recently active conversations.` : '';
        show(this.#note, page.next_cursor !== null);
        this.#render();
      })
      .finally(() => {
        this.#loading = undefined;
      });
    return this.#loading;
  }

  find(id: string): Conversation | undefined {
    return this.#conversations.find((conversation) => conversation.id === id);
  }

  select(id: string | undefined): void {
    this.#selected = id;
    for (const item of this.#list.querySelectorAll<HTMLElement>('[data-testid="conversation-item"]')) {
      if (item.dataset['id'] === id) item.setAttribute('aria-current', 'true');
      else item.removeAttribute('aria-current');
    }
  }

  /** The open conversation's live status and event count, ahead of the (lagging) list. */
  updateProgress(id: string, progress: ConversationProgress): void {
    this.#live = { id, progress };
    if (this.#applyLive()) this.#render();
  }

  /** Overlay what the open conversation's stream has shown on a list that may not have caught up. */
  #applyLive(): boolean {
    const live = this.#live;
    const conversation = live && this.find(live.id);
    if (!live || !conversation || live.progress.lastSeq < conversation.last_seq) return false;
    const { status, lastSeq, updatedAt } = live.progress;
    if (conversation.status === status && conversation.last_seq === lastSeq) return false;
    const updated: Conversation = {
      ...conversation,
      // a run that started has left the queue
      queue: status === 'running' ? null : conversation.queue,
      status,
      last_seq: lastSeq,
      updated_at: updatedAt ?? conversation.updated_at,
      counters: { ...conversation.counters, events: Math.max(conversation.counters.events, lastSeq) },
    };
    this.#conversations = this.#conversations.map((entry) => (entry.id === live.id ? updated : entry));
    return true;
  }

  async #create(run: boolean): Promise<void> {
    const title = this.#titleInput.value.trim();
    const message = this.#messageInput.value.trim();
    if (run && message === '') {
      this.#messageInput.focus();
      this.hooks.onError(new Error('Write a first message to run the agent on.'));
      return;
    }
    const buttons = [...this.#form.querySelectorAll('button')];
    for (const button of buttons) button.disabled = true;
    try {
      const { conversation } = await this.client().createConversation({
        ...(title ? { title } : {}),
        ...(message ? { message } : {}),
        ...(run ? { run: true } : {}),
        ...this.hooks.agentChoice(),
      });
      this.#titleInput.value = '';
      this.#messageInput.value = '';
      this.#conversations = [conversation, ...this.#conversations.filter((entry) => entry.id !== conversation.id)];
      this.#render();
      this.hooks.onSelect(conversation);
      void this.refresh().catch(() => undefined);
    } catch (error) {
      this.hooks.onError(error);
    } finally {
      for (const button of buttons) button.disabled = false;
    }
  }

  #render(): void {
    if (this.#conversations.length === 0) {
      this.#list.replaceChildren(h('li', { class: 'muted list-empty' }, 'No conversations yet.'));
      return;
    }
    this.#list.replaceChildren(...this.#conversations.map((conversation) => this.#item(conversation)));
  }

  #item(conversation: Conversation): HTMLLIElement {
    const button = h(
      'button',
      {
        type: 'button',
        class: 'conversation-item',
        'data-testid': 'conversation-item',
        'data-id': conversation.id,
        'data-status': conversation.status,
        'aria-current': conversation.id === this.#selected ? 'true' : undefined,
      },
      h('span', { class: 'item-title' }, conversation.title || conversation.id),
      statusBadge(conversation.status),
      // a run waiting for a slot of the tenant's: its place in the queue (it starts when a run of the tenant ends)
      conversation.queue
        ? h(
            'span',
            {
              class: 'badge queued',
              'data-testid': 'queue-position',
              title: `run queued at ${conversation.queue.queued_at}: it starts when a run of yours ends`,
            },
            `queued #${conversation.queue.position}`,
          )
        : null,
      h(
        'span',
        { class: 'item-meta' },
        `${count(conversation.counters.events)} events`,
        conversation.updated_at ? ` · ${relativeTime(conversation.updated_at)}` : '',
      ),
    );
    button.addEventListener('click', () => this.hooks.onSelect(conversation));
    return h('li', {}, button);
  }
}
