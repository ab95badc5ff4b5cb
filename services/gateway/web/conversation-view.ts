import type { DeltaFrame } from '@flotilla/api';
import { CloseCode } from '@flotilla/api/constants';
import { PendingActions, type EventSubscription, type FlotillaClient } from '@flotilla/client';
import type { ConversationStatus, Event } from '@flotilla/events';
import { byId, h, show } from './dom.js';
import { actionCard, renderEvent } from './event-view.js';
import { count, statusBadge, usd } from './format.js';
import { EventSearchBox } from './event-search-box.js';
import { FilesPanel } from './files-panel.js';
import { SecretsPanel } from './secrets-panel.js';
import { SpecPanel } from './spec-panel.js';
import { TypingArea } from './typing-area.js';
import { ImageAttachments } from './image-attachments.js';

/** What the list shows of the open conversation, ahead of its next refresh. */
export type ConversationProgress = {
  readonly status: ConversationStatus;
  readonly lastSeq: number;
  readonly updatedAt: string | null;
};

export type ConversationViewHooks = {
  /** The open conversation moved on (to update the list). */
  onProgress(id: string, progress: ConversationProgress): void;
  /** A command or the subscription failed: tell the user. */
  onError(error: unknown): void;
  /** The socket closed for good because the key was refused. */
  onUnauthorized(): void;
};

type Usage = { tokens: number; cost: number };

/** Keep following the stream only when the reader is already at (or near) its end. */
const STICKY_PX = 96;

/**
 * The open conversation: its live event stream (replayed from the start, then followed), the
 * typing area fed by token deltas, the run controls and, while the agent waits, the pending
 * actions with Approve / Reject.
 */
export class ConversationView {
  readonly #pane = byId('conversation-pane');
  readonly #empty = byId('conversation-empty');
  readonly #title = byId('conversation-title');
  readonly #statusSlot = byId('conversation-status');
  readonly #idLabel = byId('conversation-id');
  readonly #usageLabel = byId('conversation-usage');
  readonly #connection = byId('connection');
  readonly #stream = byId('stream');
  readonly #list = byId<HTMLOListElement>('event-list');
  readonly #confirmation = byId('confirmation');
  readonly #pendingList = byId<HTMLOListElement>('pending-list');
  readonly #rejectReason = byId<HTMLInputElement>('reject-reason');
  readonly #messageInput = byId<HTMLTextAreaElement>('message-input');
  readonly #buttons = {
    run: byId<HTMLButtonElement>('btn-run'),
    pause: byId<HTMLButtonElement>('btn-pause'),
    interrupt: byId<HTMLButtonElement>('btn-interrupt'),
    approve: byId<HTMLButtonElement>('btn-approve'),
    reject: byId<HTMLButtonElement>('btn-reject'),
  };
  readonly #typing = new TypingArea(byId('typing'), byId('typing-body'));
  readonly #attachments = new ImageAttachments(byId<HTMLInputElement>('image-input'), byId('attachments'));
  readonly #secrets: SecretsPanel;
  readonly #files: FilesPanel;
  readonly #search: EventSearchBox;
  readonly #spec = new SpecPanel();

  #id: string | undefined;
  #subscription: EventSubscription | undefined;
  #status: ConversationStatus = 'idle';
  #pending = new PendingActions();
  #usage: Usage = { tokens: 0, cost: 0 };
  #lastSeq = 0;
  #updatedAt: string | null = null;
  #busy = false;
  #renderQueued = false;

  constructor(
    /** The client of the current API key (it changes when the user connects with another). */
    readonly client: () => FlotillaClient,
    readonly hooks: ConversationViewHooks,
  ) {
    this.#secrets = new SecretsPanel(client, { onError: (error) => hooks.onError(error) });
    this.#files = new FilesPanel(client, { onError: (error) => hooks.onError(error) });
    this.#search = new EventSearchBox(client, this.#list, { onError: (error) => hooks.onError(error) });
    this.#buttons.run.addEventListener('click', () => this.#command((id) => this.client().run(id)));
    this.#buttons.pause.addEventListener('click', () => this.#command((id) => this.client().pause(id)));
    this.#buttons.interrupt.addEventListener('click', () => this.#command((id) => this.client().interrupt(id)));
    this.#buttons.approve.addEventListener('click', () => this.#command((id) => this.client().approve(id)));
    byId('reject-form').addEventListener('submit', (event) => {
      event.preventDefault();
      const reason = this.#rejectReason.value.trim() || 'Rejected by the user.';
      this.#command(async (id) => {
        const result = await this.client().reject(id, reason);
        this.#rejectReason.value = '';
        return result;
      });
    });
    const composer = byId<HTMLFormElement>('composer');
    composer.addEventListener('submit', (event) => {
      event.preventDefault();
      this.#send((event.submitter as HTMLButtonElement | null)?.value === 'run');
    });
    this.#messageInput.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        this.#send(true);
      }
    });
  }

  /** Show a conversation: replay its log from the start and follow it live. */
  open(id: string, title?: string | null): void {
    if (this.#id === id) return;
    this.close();
    this.#id = id;
    this.#status = 'idle';
    this.#pending = new PendingActions();
    this.#usage = { tokens: 0, cost: 0 };
    this.#lastSeq = 0;
    this.#updatedAt = null;
    this.#list.replaceChildren();
    this.#typing.clear();
    this.#title.textContent = title || 'Untitled conversation';
    this.#idLabel.textContent = id;
    this.#pane.dataset['id'] = id;
    show(this.#empty, false);
    show(this.#pane, true);
    this.#secrets.open(id);
    this.#files.open(id);
    this.#search.open(id);
    this.#spec.reset();
    this.#setConnection('connecting', 'connecting…');
    this.#render();
    void this.client()
      .getConversation(id)
      .then(
        (conversation) => {
          if (this.#id === id && conversation.title) this.#title.textContent = conversation.title;
        },
        () => undefined, // the subscription reports a missing conversation
      );
    const subscription = this.client().subscribe(id, {
      afterSeq: 0,
      onSync: (sync) => {
        if (this.#subscription !== subscription) return;
        this.#setStatus(sync.status);
        this.#setConnection(
          sync.last_seq > sync.after_seq ? 'replaying' : 'live',
          sync.last_seq > sync.after_seq ? 'loading…' : 'live',
        );
      },
      onLive: () => {
        if (this.#subscription !== subscription) return;
        this.#setConnection('live', 'live');
        this.#stream.scrollTop = this.#stream.scrollHeight;
      },
      onEvent: (event) => {
        if (this.#subscription === subscription) this.#onEvent(event);
      },
      onDelta: (delta: DeltaFrame) => {
        // deltas travel apart from the log: ones that trail an interrupt or pause are stale
        if (this.#subscription !== subscription || this.#status !== 'running') return;
        this.#keepAtBottom(() => this.#typing.add(delta));
      },
      onReconnect: (_reason, delayMs) => {
        if (this.#subscription === subscription)
          this.#setConnection('reconnecting', `reconnecting in ${Math.ceil(delayMs / 1000)} s…`);
      },
      onClose: (reason) => {
        if (this.#subscription !== subscription || !reason.fatal) return;
        this.#setConnection('closed', 'disconnected');
        if (reason.code === CloseCode.Unauthorized) this.hooks.onUnauthorized();
        else if (reason.code === CloseCode.NotFound)
          this.hooks.onError(new Error(`Conversation ${id} does not exist.`));
        else this.hooks.onError(new Error(`The event stream closed: ${reason.reason || reason.code}`));
      },
    });
    this.#subscription = subscription;
  }

  close(): void {
    const subscription = this.#subscription;
    this.#subscription = undefined;
    this.#id = undefined;
    subscription?.close();
    this.#secrets.close();
    this.#files.close();
    show(this.#pane, false);
    show(this.#empty, true);
  }

  #onEvent(event: Event): void {
    this.#pending.add(event);
    if (event.type === 'llm_usage') {
      this.#usage.tokens += event.prompt_tokens + event.completion_tokens;
      this.#usage.cost += event.cost_usd;
    }
    if (event.type === 'state_change') {
      if (event.status) this.#setStatus(event.status);
      if (event.title) this.#title.textContent = event.title;
    }
    // a change made elsewhere (the CLI, another tab); replay sends each old one too, so only live ones refresh
    if (event.type === 'agent_spec') this.#spec.show(event);
    if (event.type === 'secret_changed' && this.#connection.dataset['state'] === 'live') void this.#secrets.refresh();
    // a file put in the workspace (here, or by another client) or a tool's result: the folder shown (when it is) is listed again
    if (
      (event.type === 'workspace_file' || event.type === 'observation') &&
      this.#connection.dataset['state'] === 'live'
    )
      void this.#files.refresh();
    if (clearsTyping(event)) this.#typing.clear();
    this.#lastSeq = event.seq;
    this.#updatedAt = event.timestamp;
    this.#keepAtBottom(() => this.#list.append(renderEvent(event)));
    this.#scheduleRender();
  }

  #setStatus(status: ConversationStatus): void {
    this.#status = status;
    if (status !== 'running') this.#typing.clear();
    this.#scheduleRender();
  }

  #setConnection(state: string, text: string): void {
    this.#connection.dataset['state'] = state;
    this.#connection.textContent = text;
  }

  /** Coalesce header, controls and confirmation updates to one per frame (replays are bursts). */
  #scheduleRender(): void {
    if (this.#renderQueued) return;
    this.#renderQueued = true;
    requestAnimationFrame(() => {
      this.#renderQueued = false;
      this.#render();
    });
  }

  #render(): void {
    const status = this.#status;
    if (this.#id) this.hooks.onProgress(this.#id, { status, lastSeq: this.#lastSeq, updatedAt: this.#updatedAt });
    this.#pane.dataset['status'] = status;
    this.#statusSlot.replaceChildren(statusBadge(status, 'conversation-status'));
    this.#usageLabel.textContent =
      this.#usage.tokens > 0
        ? `${count(this.#usage.tokens)} tokens${this.#usage.cost > 0 ? ` · ${usd(this.#usage.cost)}` : ''}`
        : '';
    const busy = this.#busy;
    this.#buttons.run.disabled = busy || status === 'running' || status === 'waiting_for_confirmation';
    this.#buttons.pause.disabled = busy || status !== 'running';
    this.#buttons.interrupt.disabled = busy || status !== 'running';
    const waiting = status === 'waiting_for_confirmation';
    const pending = waiting ? this.#pending.list() : [];
    show(this.#confirmation, waiting);
    this.#buttons.approve.disabled = busy || !waiting;
    this.#buttons.reject.disabled = busy || pending.length === 0;
    this.#pendingList.replaceChildren(
      ...(pending.length > 0
        ? pending.map((action) =>
            h('li', { 'data-testid': 'pending-action', 'data-tool': action.tool_name }, actionCard(action)),
          )
        : waiting
          ? [h('li', { class: 'muted' }, 'No action is pending: approving resumes the run.')]
          : []),
    );
    for (const item of this.#list.querySelectorAll<HTMLElement>('li.event-action')) {
      item.classList.toggle(
        'awaiting',
        waiting && pending.some((action) => String(action.seq) === item.dataset['seq']),
      );
    }
  }

  #send(run: boolean): void {
    const text = this.#messageInput.value.trim();
    if (text === '' && this.#attachments.count === 0) {
      this.#messageInput.focus();
      return;
    }
    this.#command(async (id) => {
      const images = this.#attachments.count === 0 ? [] : await this.#attachments.uploads();
      const result = await this.client().sendMessage(id, text, { run, ...(images.length === 0 ? {} : { images }) });
      this.#messageInput.value = '';
      this.#attachments.clear();
      return result;
    });
  }

  /** Run one command for the open conversation; buttons stay disabled until it answers. */
  #command(action: (id: string) => Promise<unknown>): void {
    const id = this.#id;
    if (!id || this.#busy) return;
    this.#busy = true;
    this.#render();
    action(id)
      .catch((error: unknown) => this.hooks.onError(error))
      .finally(() => {
        this.#busy = false;
        this.#render();
      });
  }

  /** Apply a change, and keep the stream scrolled to its end if the reader was there. */
  #keepAtBottom(change: () => void): void {
    const stream = this.#stream;
    const atBottom = stream.scrollHeight - stream.scrollTop - stream.clientHeight < STICKY_PX;
    change();
    if (atBottom) stream.scrollTop = stream.scrollHeight;
  }
}

/** The durable result of what the deltas previewed has arrived (or the step ended without one). */
function clearsTyping(event: Event): boolean {
  if (event.source === 'agent') return true;
  return event.type === 'llm_usage' || event.type === 'conversation_error' || event.type === 'interrupt';
}
