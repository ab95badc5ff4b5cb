import { ClientFrame, CloseCode, type CommandResult, type ErrorCode } from '@flotilla/api';
import type { ConversationRef, EventLog } from '@flotilla/log';
import type { Logger } from 'pino';
import type { WebSocket } from 'ws';
import { ApiError } from './api-error.js';
import type { FeedListener, ConversationFeed } from './conversation-feed.js';
import type { ConversationService } from './conversation-service.js';
import type { SecretService } from './secret-service.js';

export type SessionOptions = {
  readonly ref: ConversationRef;
  readonly afterSeq: number;
  readonly highWaterBytes: number;
  readonly log: EventLog;
  readonly conversations: ConversationService;
  readonly secrets: SecretService;
  readonly logger: Logger;
};

const OPEN = 1;
/** While replaying from the log, how long a socket may stay above its high-water mark. */
const REPLAY_STALL_MS = 10_000;
const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * One authenticated socket on one conversation. Durable frames go out strictly by seq
 * (`#sent` is the only cursor): from the shared feed's ring when it reaches back far enough,
 * else from the log. Nothing is sent twice and nothing is skipped, however replay and live
 * commits interleave. A socket whose buffer passes the high-water mark while live is closed
 * (4008) so that it can never delay anyone else; it resumes with after_seq.
 */
export class SocketSession implements FeedListener {
  #sent: number;
  #pumping = false;
  #again = false;
  #live = false;
  #closed = false;

  constructor(
    readonly socket: WebSocket,
    readonly feed: ConversationFeed,
    readonly options: SessionOptions,
  ) {
    this.#sent = options.afterSeq;
  }

  start(status: string): void {
    this.#send(
      JSON.stringify({
        type: 'sync',
        conversation: this.options.ref.conversation,
        after_seq: this.#sent,
        last_seq: this.feed.tail.lastSeq,
        status,
      }),
    );
    this.wake();
  }

  wake(): void {
    if (this.#closed) return;
    if (this.#pumping) {
      this.#again = true;
      return;
    }
    this.#pumping = true;
    void this.#pump().finally(() => (this.#pumping = false));
  }

  transient(frame: Buffer): void {
    // transient frames are dropped, never queued, for a socket that is behind
    if (this.#live && !this.#closed && this.socket.bufferedAmount < this.options.highWaterBytes / 2) this.#send(frame);
  }

  failed(error: Error): void {
    this.close(
      CloseCode.Unavailable,
      `the log is unavailable (${error.message}); reconnect with after_seq=${this.#sent}`,
    );
  }

  close(code: number, reason: string): void {
    if (this.#closed) return;
    this.#closed = true;
    // close reasons are limited to 123 bytes
    this.socket.close(code, Buffer.from(reason).subarray(0, 123).toString());
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** An inbound frame: a command (acked or answered with an error frame). */
  async onFrame(raw: string): Promise<void> {
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      this.#error(undefined, 'invalid_json', 'The frame is not valid JSON.');
      return;
    }
    const parsed = ClientFrame.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const id =
        typeof (json as { id?: unknown })?.id === 'string' ? (json as { id: string }).id.slice(0, 64) : undefined;
      this.#error(
        id,
        'validation_failed',
        `Bad frame: ${issue ? `${issue.path.join('.') || 'frame'}: ${issue.message}` : 'unknown'}`,
      );
      return;
    }
    const frame = parsed.data;
    const { conversations, ref } = this.options;
    if (frame.type === 'auth') return; // a repeated auth frame is harmless
    const id = frame.id;
    try {
      let result: CommandResult | undefined;
      switch (frame.type) {
        case 'ping':
          this.#send(
            JSON.stringify({
              type: 'ack',
              ...(id ? { id } : {}),
              status: (await conversations.snapshot(ref)).status,
              last_seq: this.feed.tail.lastSeq,
              appended: false,
            }),
          );
          return;
        case 'message':
          result = await conversations.sendMessage(ref, frame, frame.run ?? false);
          break;
        case 'run':
          result = await conversations.run(ref);
          break;
        case 'pause':
          result = await conversations.pause(ref, frame.reason);
          break;
        case 'interrupt':
          result = await conversations.interrupt(ref, frame.reason);
          break;
        case 'approve':
          result = await conversations.approve(ref);
          break;
        case 'reject':
          result = await conversations.reject(ref, frame.reason);
          break;
        case 'secret_set':
          result = await this.options.secrets.setForConversation(ref, frame.name, frame.value);
          break;
        case 'secret_remove':
          result = await this.options.secrets.removeForConversation(ref, frame.name);
          break;
      }
      this.#send(
        JSON.stringify({
          type: 'ack',
          ...(id ? { id } : {}),
          status: result.status,
          last_seq: result.last_seq,
          appended: result.appended,
        }),
      );
    } catch (error) {
      if (error instanceof ApiError) this.#error(id, error.code, error.message);
      else {
        this.options.logger.error(
          { err: error, conversation: ref.conversation, tenant: ref.tenant },
          'socket command failed',
        );
        this.#error(id, 'unavailable', 'The command could not be completed; retry it.');
      }
    }
  }

  async #pump(): Promise<void> {
    try {
      do {
        this.#again = false;
        while (!this.#closed && this.#sent < this.feed.tail.lastSeq) {
          const ready = this.feed.since(this.#sent);
          if (ready) {
            for (const event of ready) {
              if (this.#closed) return;
              if (event.seq !== this.#sent + 1) break; // only ever the next seq (the outer loop re-reads)
              if (this.#live && this.socket.bufferedAmount > this.options.highWaterBytes) {
                this.close(CloseCode.SlowConsumer, `slow consumer: reconnect with after_seq=${this.#sent}`);
                return;
              }
              this.#send(event.frame);
              this.#sent = event.seq;
            }
          } else {
            await this.#replay();
          }
        }
        if (!this.#live && !this.#closed) {
          this.#live = true;
          this.#send(JSON.stringify({ type: 'live', last_seq: this.#sent }));
        }
      } while (this.#again && !this.#closed);
    } catch (error) {
      this.options.logger.warn({ err: error, conversation: this.options.ref.conversation }, 'socket replay failed');
      this.close(CloseCode.Unavailable, `the log could not be read; reconnect with after_seq=${this.#sent}`);
    }
  }

  /** Send from the log what the ring no longer holds, waiting (bounded) for the client to drain. */
  async #replay(): Promise<void> {
    const until = this.feed.tail;
    for await (const commit of this.options.log.read(this.options.ref, { afterSeq: this.#sent, until })) {
      for (const event of commit.events) {
        if (this.#closed) return;
        if (event.seq !== this.#sent + 1) continue;
        this.#send(JSON.stringify({ type: 'event', seq: event.seq, event }));
        this.#sent = event.seq;
      }
      const stalledSince = Date.now();
      while (!this.#closed && this.socket.bufferedAmount > this.options.highWaterBytes) {
        if (Date.now() - stalledSince > REPLAY_STALL_MS) {
          this.close(CloseCode.SlowConsumer, `slow consumer: reconnect with after_seq=${this.#sent}`);
          return;
        }
        await delay(10);
      }
      if (this.feed.since(this.#sent)) return; // the ring reaches back here now: continue from memory
    }
  }

  #error(id: string | undefined, code: ErrorCode, message: string): void {
    this.#send(JSON.stringify({ type: 'error', ...(id ? { id } : {}), code, message }));
  }

  #send(frame: string | Buffer): void {
    // a Buffer is sent as it is (a text frame): the feed encodes each event once for all its sockets
    if (this.socket.readyState === OPEN) this.socket.send(frame, { binary: false });
  }
}
