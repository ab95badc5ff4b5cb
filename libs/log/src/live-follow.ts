import type { NatsConnection, Status } from '@nats-io/transport-node';
import type { RawMessage } from './codec.js';
import { DIRECT_BATCH_SIZE, directBatch, type DirectBatch } from './direct-batch.js';
import { LogError, LogErrorCode } from './errors.js';

/** How long a follower waits, at most, before it looks at the stream without being woken. */
export const FOLLOW_BACKSTOP_MS = 5_000;

/**
 * Pauses before a woken follower looks again when a publish it saw is not in the stream yet (the
 * stream stores a message a moment after core subscribers see it; a replica later still): about
 * a second in all, then the backstop poll takes over.
 */
const RECHECK_DELAYS_MS = [2, 5, 10, 25, 50, 100, 200, 400] as const;

/** Pauses after a failed read (the server restarting, a busy server dropping the request). */
const RETRY_DELAYS_MS = [100, 250, 500, 1_000, 2_000] as const;

export type SubjectFollow = {
  readonly stream: string;
  readonly subject: string;
  /** The first stream sequence to read. */
  readonly from: number;
  readonly signal?: AbortSignal | undefined;
  /**
   * The subject's next message at or after `seq` from the stream's leader (a message get): on a
   * replicated stream, a woken follower that finds nothing in a direct get (possibly answered by
   * a replica that is behind) asks the leader instead.
   */
  readonly leaderGet?: ((seq: number) => Promise<RawMessage | null>) | undefined;
  /** The backstop poll's period. Default FOLLOW_BACKSTOP_MS (each wait jittered by ±25%). */
  readonly backstopMs?: number | undefined;
};

/**
 * The subject's messages from `from`, live, a batch at a time, until the signal aborts — without
 * a JetStream consumer. A core NATS subscription on the subject wakes the follower (the stream
 * stores what is published there, and a core subscriber sees the same publish); every read is a
 * direct-get batch from the last message yielded, so the order and completeness come from the
 * stream, never from the core message. A woken follower that finds nothing yet looks again a few
 * times over about a second; a reconnect of the connection (a server restart) wakes every
 * follower on it; and a follower looks anyway after FOLLOW_BACKSTOP_MS without a wake-up.
 *
 * Throws LogError('forbidden') when the connection's user may not subscribe to the subject, and
 * LogError('closed') when the connection closes for good.
 */
export async function* followSubject(nc: NatsConnection, follow: SubjectFollow): AsyncGenerator<RawMessage[]> {
  const { stream, subject, signal } = follow;
  const backstopMs = follow.backstopMs ?? FOLLOW_BACKSTOP_MS;
  if (!Number.isFinite(backstopMs) || backstopMs < 10)
    throw new TypeError(
      `followBackstopMs must be a number of milliseconds of at least 10, not ${String(follow.backstopMs)}`,
    );
  const wakeup = new Wakeup();
  // publishes seen and not yet read from the stream (a refused append is seen too, and never stored)
  let owed = 0;
  let refused: Error | undefined;
  const subscription = nc.subscribe(subject, {
    callback: (error) => {
      if (error) refused = error;
      else owed += 1;
      wakeup.wake();
    },
  });
  const stopWatching = watchReconnects(nc, () => wakeup.wake());
  const onAbort = (): void => wakeup.wake();
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    // the server has the subscription before the first read: nothing published after it is missed
    await nc.flush().catch(() => undefined);
    let cursor = Math.max(1, follow.from);
    let rechecks = 0;
    let failures = 0;
    while (!signal?.aborted) {
      if (refused) {
        throw new LogError(
          LogErrorCode.Forbidden,
          `may not follow ${subject}: ${refused.message}; the connection's NATS user needs permission to subscribe to it`,
          { cause: refused },
        );
      }
      if (nc.isClosed())
        throw new LogError(
          LogErrorCode.Closed,
          `the NATS connection closed while following ${subject}: connect again and follow from the last commit seen`,
        );
      wakeup.clear();
      let answer: DirectBatch;
      try {
        answer = await directBatch(nc, { stream, subject, from: cursor, batch: DIRECT_BATCH_SIZE });
        // a replica that is behind may not hold a publish seen: the leader has it once stored
        if (answer.messages.length === 0 && owed > 0 && rechecks > 0 && follow.leaderGet) {
          const stored = await follow.leaderGet(cursor);
          if (stored) answer = { messages: [stored], more: true };
        }
        failures = 0;
      } catch {
        if (nc.isClosed() || signal?.aborted) continue;
        // the server restarting, or a request dropped: read again shortly (a reconnect wakes the wait)
        await wakeup.wait(RETRY_DELAYS_MS[Math.min(failures, RETRY_DELAYS_MS.length - 1)]!);
        failures += 1;
        continue;
      }
      if (signal?.aborted) return;
      const { messages } = answer;
      if (messages.length > 0) {
        cursor = messages[messages.length - 1]!.seq + 1;
        owed = Math.max(0, owed - messages.length);
        rechecks = 0;
        yield messages;
        if (answer.more) continue;
      }
      if (owed > 0 && rechecks < RECHECK_DELAYS_MS.length) {
        await wakeup.wait(RECHECK_DELAYS_MS[rechecks]!);
        rechecks += 1;
        continue;
      }
      owed = 0;
      rechecks = 0;
      await wakeup.wait(backstopMs * (0.75 + Math.random() * 0.5));
    }
  } finally {
    signal?.removeEventListener('abort', onAbort);
    stopWatching();
    subscription.unsubscribe();
  }
}

/** A follower's doorbell: a wake-up rung while it reads is kept, so the next wait returns at once. */
class Wakeup {
  #rung = false;
  #ring: (() => void) | undefined;

  wake(): void {
    this.#rung = true;
    const ring = this.#ring;
    this.#ring = undefined;
    ring?.();
  }

  clear(): void {
    this.#rung = false;
  }

  /** Resolves when woken (at once when woken since the last `clear`) or after `ms`. */
  wait(ms: number): Promise<void> {
    if (this.#rung) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#ring = undefined;
        resolve();
      }, ms);
      this.#ring = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}

type StatusWatch = {
  readonly listeners: Set<() => void>;
  readonly iterator: AsyncIterable<Status> & { stop?: () => void };
};

/** One status watch per connection, shared by all its followers. */
const watches = new WeakMap<NatsConnection, StatusWatch>();

/** Calls `listener` when the connection reconnects (a restarted server) or closes; returns the unwatch. */
function watchReconnects(nc: NatsConnection, listener: () => void): () => void {
  let watch = watches.get(nc);
  if (!watch) {
    const created: StatusWatch = { listeners: new Set(), iterator: nc.status() as StatusWatch['iterator'] };
    watches.set(nc, created);
    void (async () => {
      for await (const status of created.iterator) {
        if (status.type === 'reconnect' || status.type === 'close') for (const wake of created.listeners) wake();
      }
    })().catch(() => undefined);
    watch = created;
  }
  const current = watch;
  current.listeners.add(listener);
  return () => {
    current.listeners.delete(listener);
    if (current.listeners.size > 0 || watches.get(nc) !== current) return;
    watches.delete(nc);
    current.iterator.stop?.();
  };
}
