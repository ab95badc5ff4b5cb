import type { ClientFrame, DeltaFrame, ErrorFrame, ServerFrame, SyncFrame } from '@flotilla/api';
import { CloseCode } from '@flotilla/api/constants';
import type { ConversationStatus, Event } from '@flotilla/events';

/** The part of the WebSocket API the client uses: the browser's WebSocket and `ws` both fit. */
export type WebSocketLike = {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onclose: ((event: { code: number; reason: string }) => void) | null;
  onerror: ((event: unknown) => void) | null;
};

export type SubscribeOptions = {
  /** Resume after this seq (0 = from the start). */
  readonly afterSeq?: number;
  /** Every durable event, exactly once, in order. */
  readonly onEvent?: (event: Event) => void;
  /** Token deltas and other transient traffic. */
  readonly onDelta?: (delta: DeltaFrame) => void;
  /** Each (re)connection's sync frame. */
  readonly onSync?: (sync: SyncFrame) => void;
  /** Replay reached the tail: what follows is live. */
  readonly onLive?: (lastSeq: number) => void;
  /** A reconnect is scheduled (why, and after how long). */
  readonly onReconnect?: (reason: { code: number; reason: string }, delayMs: number) => void;
  /** The subscription ended for good (closed by the user, or a fatal close code). */
  readonly onClose?: (reason: { code: number; reason: string; fatal: boolean }) => void;
  /** Reconnect after drops. Default true. */
  readonly reconnect?: boolean;
};

type Pending = { resolve(frame: ServerFrame): void; reject(error: Error): void };

/** Close codes after which reconnecting cannot help. */
const FATAL: ReadonlySet<number> = new Set([
  CloseCode.Unauthorized,
  CloseCode.NotFound,
  CloseCode.BadFrame,
  CloseCode.MessageTooBig,
]);
const OPEN = 1;

/**
 * A live event subscription. It tracks the last seq it delivered and, when the socket drops
 * (network, gateway restart, slow-consumer close), reconnects with `after_seq` = that seq, so
 * `onEvent` sees every event exactly once, in order.
 */
export class EventSubscription {
  #socket: WebSocketLike | undefined;
  #lastSeq: number;
  #closed = false;
  #attempt = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #nextId = 0;
  readonly #pending = new Map<string, Pending>();
  #status: ConversationStatus | undefined;
  #ready: Promise<void>;
  #markReady!: () => void;
  #failReady!: (error: Error) => void;

  constructor(
    readonly url: string,
    readonly apiKey: string,
    readonly WebSocketImpl: new (url: string) => WebSocketLike,
    readonly options: SubscribeOptions,
  ) {
    this.#lastSeq = options.afterSeq ?? 0;
    this.#ready = this.#newReady();
    this.#connect();
  }

  /** The seq of the last event delivered: resume from here. */
  get lastSeq(): number {
    return this.#lastSeq;
  }
  /** The status as of the last sync frame or state change seen. */
  get status(): ConversationStatus | undefined {
    return this.#status;
  }
  /** Resolves once the current connection has received its sync frame. */
  ready(): Promise<void> {
    return this.#ready;
  }

  /** Send a command frame; resolves with its ack, rejects with its error frame. */
  async command(frame: Exclude<ClientFrame, { type: 'auth' }>): Promise<ServerFrame> {
    await this.#ready;
    const socket = this.#socket;
    if (!socket || socket.readyState !== OPEN) throw new Error('the socket is not open');
    const id = frame.id ?? `c${++this.#nextId}`;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      socket.send(JSON.stringify({ ...frame, id }));
    });
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#socket?.close(1000, 'closed by the client');
    this.#rejectPending(new Error('subscription closed'));
    this.options.onClose?.({ code: 1000, reason: 'closed by the client', fatal: false });
  }

  #newReady(): Promise<void> {
    const ready = new Promise<void>((resolve, reject) => {
      this.#markReady = resolve;
      this.#failReady = reject;
    });
    ready.catch(() => undefined);
    return ready;
  }

  #connect(): void {
    const socket = new this.WebSocketImpl(`${this.url}?after_seq=${this.#lastSeq}`);
    this.#socket = socket;
    socket.onopen = () => socket.send(JSON.stringify({ type: 'auth', api_key: this.apiKey }));
    socket.onmessage = (message) => this.#onFrame(String(message.data));
    socket.onerror = () => undefined; // a close follows
    socket.onclose = (event) => this.#onClose(socket, event.code, event.reason);
  }

  #onFrame(raw: string): void {
    let frame: ServerFrame;
    try {
      frame = JSON.parse(raw) as ServerFrame;
    } catch {
      return;
    }
    switch (frame.type) {
      case 'sync':
        this.#attempt = 0;
        this.#status = frame.status;
        this.options.onSync?.(frame);
        this.#markReady();
        return;
      case 'event':
        if (frame.seq <= this.#lastSeq) return; // never twice
        if (frame.seq !== this.#lastSeq + 1) {
          // a gap can only come from a gateway bug; reconnecting from our position heals it
          this.#socket?.close(4000, `gap: got ${frame.seq} after ${this.#lastSeq}`);
          return;
        }
        this.#lastSeq = frame.seq;
        if (frame.event.type === 'state_change' && frame.event.status) this.#status = frame.event.status;
        this.options.onEvent?.(frame.event);
        return;
      case 'live':
        this.options.onLive?.(frame.last_seq);
        return;
      case 'delta':
        this.options.onDelta?.(frame);
        return;
      case 'ack':
      case 'error':
        this.#settle(frame);
        return;
    }
  }

  #settle(frame: ServerFrame & { id?: string }): void {
    const pending = frame.id ? this.#pending.get(frame.id) : undefined;
    if (!pending || !frame.id) return;
    this.#pending.delete(frame.id);
    if (frame.type === 'error')
      pending.reject(Object.assign(new Error((frame as ErrorFrame).message), { code: (frame as ErrorFrame).code }));
    else pending.resolve(frame);
  }

  #rejectPending(error: Error): void {
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
  }

  #onClose(socket: WebSocketLike, code: number, reason: string): void {
    if (socket !== this.#socket || this.#closed) return;
    this.#rejectPending(new Error(`socket closed (${code} ${reason})`));
    const fatal = FATAL.has(code);
    if (fatal || this.options.reconnect === false) {
      this.#closed = true;
      this.#failReady(new Error(`subscription closed: ${code} ${reason}`));
      this.options.onClose?.({ code, reason, fatal });
      return;
    }
    this.#ready = this.#newReady();
    const delay =
      code === CloseCode.SlowConsumer ? 0 : Math.min(5_000, 100 * 2 ** this.#attempt) * (0.5 + Math.random() / 2);
    this.#attempt += 1;
    this.options.onReconnect?.({ code, reason }, delay);
    this.#timer = setTimeout(() => this.#connect(), delay);
  }
}
